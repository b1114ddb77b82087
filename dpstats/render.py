"""Rendering in one place: the :class:`Summary` value and its text, LaTeX, Markdown, HTML and JSON forms.

Everything here is presentation of released values: no module of the
mechanisms, the front end or the results is imported, so results, the
command line, the demo and the R bridge all render through this module
(the multi-model tables to come will too). ``plain`` turns any result's
``to_dict()`` into builtins for JSON and for R.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

FORMATS = ("text", "latex", "markdown", "json")
"""The output formats of :func:`render` (and of the command line)."""


@dataclass(frozen=True)
class Summary:
    """A rendered-on-demand summary table."""

    title: str
    model: tuple[tuple[str, str], ...]
    privacy: tuple[tuple[str, str], ...]
    coefficients: Any  # a pandas DataFrame: terms by columns
    noisy_stats: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]

    def as_text(self) -> str:
        """Plain text, as statsmodels prints."""
        return render_text(self)

    def as_latex(self) -> str:
        """A LaTeX ``table`` environment (booktabs rules)."""
        return render_latex(self)

    def as_markdown(self) -> str:
        """GitHub-flavoured Markdown."""
        return render_markdown(self)

    def as_html(self) -> str:
        """An HTML fragment."""
        return render_html(self)

    def _repr_html_(self) -> str:
        return self.as_html()

    def __str__(self) -> str:
        return self.as_text()


WIDTH = 78


def _number(value: float) -> str:
    if not math.isfinite(value):
        return "nan"
    return f"{value:.4f}" if abs(value) >= 1e-4 or value == 0 else f"{value:.3e}"


def _coef_rows(summary: Summary) -> tuple[list[str], list[list[str]]]:
    header = ["", *summary.coefficients.columns]
    rows = [[str(term), *(_number(v) for v in row)] for term, row in summary.coefficients.iterrows()]
    return header, rows


def _key_values(summary: Summary) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    blocks = [("Model", summary.model), ("Privacy", summary.privacy)]
    if summary.noisy_stats:
        blocks.append(("Noisy sufficient statistics (released)", summary.noisy_stats))
    return blocks


def _aligned(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))


def render_text(summary: Summary) -> str:
    """statsmodels-style plain text."""
    lines = [summary.title.center(WIDTH), "=" * WIDTH]
    for name, block in _key_values(summary):
        lines.append(name + ":")
        key_width = max(len(k) for k, _ in block)
        lines += [f"  {k:<{key_width}}  {v}" for k, v in block]
        lines.append("-" * WIDTH)
    header, rows = _coef_rows(summary)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines.append(_aligned(header, widths))
    lines.append("-" * WIDTH)
    lines += [_aligned(row, widths) for row in rows]
    lines.append("=" * WIDTH)
    lines += [f"[{i}] {note}" for i, note in enumerate(summary.notes, 1)]
    return "\n".join(lines)


_LATEX_SPECIAL = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    # not special, but misprinted by the default OT1 font encoding (P>|z| as P¿—z—)
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def render_latex(summary: Summary) -> str:
    """A booktabs ``table`` with the coefficients and the privacy in notes."""
    header, rows = _coef_rows(summary)
    cols = "l" + "r" * (len(header) - 1)
    out = [
        r"\begin{table}[htbp]",
        r"\centering",
        f"\\caption{{{latex_escape(summary.title)}}}",
        f"\\begin{{tabular}}{{{cols}}}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in header) + r" \\",
        r"\midrule",
    ]
    out += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows]
    out.append(r"\midrule")
    for _, block in _key_values(summary):
        for key, value in block:
            cell = f"\\footnotesize {latex_escape(key)}: {latex_escape(value)}"
            out.append(f"\\multicolumn{{{len(header)}}}{{l}}{{{cell}}} \\\\")
    out += [r"\bottomrule", r"\end{tabular}"]
    out += [f"\\par\\footnotesize {latex_escape(note)}" for note in summary.notes]
    out.append(r"\end{table}")
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", r"\|")


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table: the first column left-aligned, the others right-aligned."""
    out = ["| " + " | ".join(_md_cell(h) for h in header) + " |"]
    out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    return out + ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]


def render_markdown(summary: Summary) -> str:
    """GitHub-flavoured Markdown."""
    header, rows = _coef_rows(summary)
    out = [f"**{summary.title}**", "", *markdown_table(header, rows)]
    for name, block in _key_values(summary):
        out += ["", f"*{name}*", "", "| | |", "|---|---|"]
        out += [f"| {_md_cell(k)} | {_md_cell(v)} |" for k, v in block]
    out.append("")
    out += [f"{i}. {_md_cell(note)}" for i, note in enumerate(summary.notes, 1)]
    return "\n".join(out)


def render_html(summary: Summary) -> str:
    """An HTML fragment with one table per block."""
    esc = html.escape
    header, rows = _coef_rows(summary)
    out = [f'<div class="dpstats-summary"><h4>{esc(summary.title)}</h4>']
    for name, block in _key_values(summary):
        out.append(f"<table><caption>{esc(name)}</caption>")
        out += [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in block]
        out.append("</table>")
    out.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr></thead><tbody>")
    out += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows]
    out.append("</tbody></table><ol>" + "".join(f"<li>{esc(n)}</li>" for n in summary.notes) + "</ol></div>")
    return "\n".join(out)


class Renderable(Protocol):
    """What :func:`render` needs of a result."""

    def summary(self) -> Summary: ...

    def to_dict(self) -> dict: ...


def plain(obj: Any) -> Any:
    """``obj`` as nested builtins: dict (str keys), list, str, float, int, bool, None.

    numpy and pandas values are recognised by their ``item`` / ``tolist``
    methods, so this module imports neither; pandas' missing markers become None.
    """
    if obj is None or isinstance(obj, bool | str):
        return obj
    if isinstance(obj, int | float):
        return obj if type(obj) in (int, float) else (int(obj) if isinstance(obj, int) else float(obj))
    if type(obj).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [plain(v) for v in obj]
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, pandas Series and Index
        return plain(obj.tolist())
    return str(obj)


def _strict(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_strict(v) for v in obj]
    return obj


def dumps(obj: object) -> str:
    """Strict JSON of ``obj`` (NaN and infinities become null), indented."""
    return json.dumps(_strict(plain(obj)), indent=2, allow_nan=False)


def render(res: Renderable, fmt: str) -> str:
    """A result in one of :data:`FORMATS`."""
    if fmt == "json":
        return dumps(res.to_dict())
    summary = res.summary()
    if fmt == "latex":
        return summary.as_latex()
    if fmt == "markdown":
        return summary.as_markdown()
    return summary.as_text()
