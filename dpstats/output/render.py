"""Rendering in one place: the :class:`Summary` of one fit, the :class:`ModelTable` of several, and their formats.

Everything here is presentation of released values: no module of the
mechanisms, the front end or the results is imported, so results, the
multi-model tables (dpstats/report/tables.py), the command line, the demo and the R
bridge all render through this module. ``plain`` turns any result's
``to_dict()`` into builtins for JSON and for R.
"""

from __future__ import annotations

import html
import json
import math
import re
import textwrap
from collections.abc import Callable, Mapping
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
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
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


# --------------------------------------------------------------------------
# Several models side by side (the content is built by dpstats/report/tables.py)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TableRow:
    """One row of a :class:`ModelTable`: a label and one cell per model column.

    ``stars`` (one count per cell, or empty) marks significance, drawn by each
    format in its own way; ``below`` (one cell per column, or empty) is the
    line under the cells: a standard error in parentheses or an interval.
    """

    label: str
    cells: tuple[str, ...]
    stars: tuple[int, ...] = ()
    below: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelTable:
    """Models side by side: header rows over the model columns, panels of rows, notes.

    ``header`` holds one or more rows of one cell per model column (equal
    neighbours in all but the last row are drawn as one spanning cell);
    ``panels`` are groups of rows separated by rules (coefficients, collapsed
    blocks, statistics); ``below`` names what the rows' second lines hold
    (``"se"`` or ``"ci"``), for :meth:`to_frame`.
    """

    title: str
    header: tuple[tuple[str, ...], ...]
    panels: tuple[tuple[TableRow, ...], ...]
    notes: tuple[str, ...]
    below: str = "se"

    def as_text(self) -> str:
        """Plain text, aligned columns."""
        return render_table_text(self)

    def as_latex(self) -> str:
        """A LaTeX ``table`` with a booktabs ``tabular`` (the preamble needs ``\\usepackage{booktabs}``)."""
        return render_table_latex(self)

    def as_markdown(self) -> str:
        """GitHub-flavoured Markdown."""
        return render_table_markdown(self)

    def as_html(self) -> str:
        """An HTML ``table`` fragment."""
        return render_table_html(self)

    def to_frame(self) -> Any:
        """The cells as a pandas DataFrame of strings (stars as ``*``).

        Rows are indexed by (row label, line): ``"estimate"`` and ``self.below``
        for a coefficient, ``""`` for the other rows; columns by the header rows.
        """
        import pandas as pd  # only here: the rest of this module needs no pandas

        index, body = [], []
        for row in _rows(self):
            index.append((row.label, "estimate" if row.below else ""))
            body.append(_marked(row, str, _ascii_stars))
            if row.below:
                index.append((row.label, self.below))
                body.append(list(row.below))
        columns = pd.MultiIndex.from_arrays(self.header) if len(self.header) > 1 else list(self.header[-1])
        return pd.DataFrame(body, index=pd.MultiIndex.from_tuples(index, names=["row", "line"]), columns=columns)

    def _repr_html_(self) -> str:
        return self.as_html()

    def __str__(self) -> str:
        return self.as_text()


def _rows(table: ModelTable) -> list[TableRow]:
    return [row for panel in table.panels for row in panel]


def _ascii_stars(count: int) -> str:
    return "*" * count


def _marked(row: TableRow, escape: Callable[[str], str], mark: Callable[[int], str]) -> list[str]:
    """The row's cells escaped for a format, each followed by its significance mark."""
    stars = row.stars or (0,) * len(row.cells)
    return [escape(cell) + (mark(k) if k else "") for cell, k in zip(row.cells, stars, strict=True)]


def _spans(cells: tuple[str, ...]) -> list[tuple[str, int]]:
    """Runs of equal neighbouring cells as (text, length)."""
    runs: list[tuple[str, int]] = []
    for cell in cells:
        if runs and runs[-1][0] == cell:
            runs[-1] = (cell, runs[-1][1] + 1)
        else:
            runs.append((cell, 1))
    return runs


def _header_runs(table: ModelTable) -> list[list[tuple[str, int]]]:
    """Every header row as runs: spanning cells in all rows but the last."""
    return [*(_spans(row) for row in table.header[:-1]), [(cell, 1) for cell in table.header[-1]]]


def render_table_text(table: ModelTable) -> str:
    """Aligned plain text: estimates over their second lines, rules between the panels."""
    panels: list[list[tuple[str, list[str]]]] = []
    for panel in table.panels:
        panels.append([])
        for row in panel:
            panels[-1].append((row.label, _marked(row, str, _ascii_stars)))
            if row.below:
                panels[-1].append(("", list(row.below)))
    lines = [line for panel in panels for line in panel]
    stub = max([len(label) for label, _ in lines] + [0])
    widths = [max([len(cells[i]) for _, cells in lines] + [6]) for i in range(len(table.header[-1]))]
    runs = _header_runs(table)
    for row in runs:  # a cell wider than its columns widens the last of them
        start = 0
        for text, length in row:
            room = sum(widths[start : start + length]) + 2 * (length - 1)
            widths[start + length - 1] += max(0, len(text) - room)
            start += length
    total = stub + sum(w + 2 for w in widths)
    out = [table.title.center(total)] if table.title else []
    out.append("=" * total)
    for number, row in enumerate(runs):
        start, cells = 0, []
        for text, length in row:
            width = sum(widths[start : start + length]) + 2 * (length - 1)
            cells.append(text.rjust(width) if number == len(runs) - 1 else text.center(width))
            start += length
        out.append(" " * stub + "  " + "  ".join(cells))
    for panel in panels:
        out.append("-" * total)
        out += [
            label.ljust(stub) + "".join("  " + c.rjust(w) for c, w in zip(cells, widths, strict=True))
            for label, cells in panel
        ]
    out.append("=" * total)
    for note in table.notes:
        out += textwrap.wrap(note, width=max(total, 60))
    return "\n".join(out)


_LATEX_LABELS = {"eps": r"$\varepsilon$", "delta": r"$\delta$", "rho": r"$\rho$"}
_HTML_LABELS = {"eps": "&#949;", "delta": "&#948;", "rho": "&#961;"}  # numeric: XML has no named Greek


def _latex_number(text: str) -> str:
    """A model cell escaped for LaTeX, with a minus sign (not a hyphen) before numbers."""
    return re.sub(r"(?<![\w.])-(?=\d)", "$-$", latex_escape(text))


def render_table_latex(table: ModelTable) -> str:
    """A ``table`` float around a booktabs ``tabular``: spanning headers with ``cmidrule``, panels with ``midrule``."""
    runs = _header_runs(table)
    out = [r"\begin{table}[htbp]", r"\centering"]
    if table.title:
        out.append(f"\\caption{{{latex_escape(table.title)}}}")
    out += [f"\\begin{{tabular}}{{l{'c' * len(table.header[-1])}}}", r"\toprule"]
    for number, row in enumerate(runs):
        cells, rules, start = [], [], 2
        for text, length in row:
            cells.append(
                f"\\multicolumn{{{length}}}{{c}}{{{latex_escape(text)}}}" if length > 1 else latex_escape(text)
            )
            if number < len(runs) - 1 and text:
                rules.append(f"\\cmidrule(lr){{{start}-{start + length - 1}}}")
            start += length
        out.append(" & " + " & ".join(cells) + r" \\")
        if rules:
            out.append(" ".join(rules))
    for panel in table.panels:
        out.append(r"\midrule")
        for row in panel:
            label = _LATEX_LABELS.get(row.label, latex_escape(row.label))
            cells = _marked(row, _latex_number, lambda k: f"$^{{{'*' * k}}}$")
            out.append(label + " & " + " & ".join(cells) + r" \\")
            if row.below:
                out.append(" & " + " & ".join(_latex_number(c) for c in row.below) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    if table.notes:
        out.append(r"\par\smallskip\footnotesize")
        out += [latex_escape(note) + r"\par" for note in table.notes]
    out.append(r"\end{table}")
    return "\n".join(out)


def render_table_markdown(table: ModelTable) -> str:
    """A Markdown table: the last header row heads it, earlier header rows open the body; notes below."""
    body = [["", *row] for row in table.header[:-1]]
    for row in _rows(table):
        body.append([row.label, *_marked(row, str, lambda k: r"\*" * k)])
        if row.below:
            body.append(["", *row.below])
    out = [f"**{_md_cell(table.title)}**", ""] if table.title else []
    out += markdown_table(["", *table.header[-1]], body)
    if table.notes:
        out += ["", *(_md_cell(note).replace("*", r"\*") + "  " for note in table.notes)]
    return "\n".join(out).rstrip()


_CENTRED = '<td style="text-align: center">'


def render_table_html(table: ModelTable) -> str:
    """An HTML ``table``: booktabs-like rules as inline styles, notes in the footer."""
    esc = html.escape
    runs = _header_runs(table)
    out = [
        '<table class="dpstats-table" style="border-collapse: collapse; border-top: 2px solid; '
        'border-bottom: 2px solid">'
    ]
    if table.title:
        out.append(f"<caption>{esc(table.title)}</caption>")
    out.append("<thead>")
    for number, row in enumerate(runs):
        rule = "border-bottom: 1px solid; " if number < len(runs) - 1 else ""
        cells = "".join(
            f'<th colspan="{length}" style="{rule if text else ""}text-align: center">{esc(text)}</th>'
            for text, length in row
        )
        out.append(f"<tr><th></th>{cells}</tr>")
    out.append("</thead>")
    for panel in table.panels:
        out.append('<tbody style="border-top: 1px solid">')
        for row in panel:
            label = _HTML_LABELS.get(row.label, esc(row.label))
            cells = _marked(row, esc, lambda k: f"<sup>{'*' * k}</sup>")
            out.append(f"<tr><td>{label}</td>" + "".join(f"{_CENTRED}{c}</td>" for c in cells) + "</tr>")
            if row.below:
                out.append("<tr><td></td>" + "".join(f"{_CENTRED}{esc(c)}</td>" for c in row.below) + "</tr>")
        out.append("</tbody>")
    if table.notes:
        notes = "<br/>".join(esc(note) for note in table.notes)
        span = len(table.header[-1]) + 1
        out.append(
            f'<tfoot><tr><td colspan="{span}" style="border-top: 1px solid; font-size: smaller">'
            f"{notes}</td></tr></tfoot>"
        )
    out.append("</table>")
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
