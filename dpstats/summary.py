"""The summary of a fit: what a paper's table needs, in one value.

``res.summary()`` returns a :class:`Summary` (it never prints). Its blocks are
the model, the privacy spent, the coefficient table, the released noisy
statistics and notes that say what the standard errors cover. Rendering lives
in :mod:`dpstats.tables`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from . import tables

if TYPE_CHECKING:
    from .results import DPRegressionResults

TITLES = {"ols": "DP OLS Regression Results", "quantreg": "DP Quantile Regression Results"}


@dataclass(frozen=True)
class Summary:
    """A rendered-on-demand summary table."""

    title: str
    model: tuple[tuple[str, str], ...]
    privacy: tuple[tuple[str, str], ...]
    coefficients: pd.DataFrame
    noisy_stats: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]

    def as_text(self) -> str:
        """Plain text, as statsmodels prints."""
        return tables.render_text(self)

    def as_latex(self) -> str:
        """A LaTeX ``table`` environment (booktabs rules)."""
        return tables.render_latex(self)

    def as_markdown(self) -> str:
        """GitHub-flavoured Markdown."""
        return tables.render_markdown(self)

    def as_html(self) -> str:
        """An HTML fragment."""
        return tables.render_html(self)

    def _repr_html_(self) -> str:
        return self.as_html()

    def __str__(self) -> str:
        return self.as_text()


def _fmt(value: float) -> str:
    return "nan" if not np.isfinite(value) else f"{value:.4g}"


def _stat_text(value: np.ndarray) -> str:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.size > 16:
        return f"{arr.shape[0]}x{arr.shape[1]} matrix (see res.noisy_stats)" if arr.ndim == 2 else "see res.noisy_stats"
    if arr.ndim == 2:
        return "; ".join(", ".join(_fmt(v) for v in row) for row in arr)
    return ", ".join(_fmt(v) for v in arr)


def build_summary(res: DPRegressionResults, alpha: float = 0.05) -> Summary:
    """Assemble the summary of ``res`` (post-processing only)."""
    status = "FAILED: " + (res.reason or "") if res.failed else "ok"
    method = res.method_title + (f" [auto: {res.method_reason}]" if res.method_reason else "")
    model = (
        ("Dep. variable", res.y_name),
        ("Formula", res.formula),
        ("Method", method),
        ("Reference", res.citation),
        ("No. observations", f"{res.nobs} (public)"),
        ("Parameters", str(len(res.term_names))),
        ("Status", status),
    )
    spent = res.privacy
    privacy = [
        ("Privacy", spent.describe()),
        ("Neighbours", spent.neighbours),
        ("Budget split", ", ".join(f"{name}: {part:.4g}" for name, part in spent.split)),
        (
            "Declared bounds",
            ", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in res.declared_bounds.items()) or "none",
        ),
    ]
    if res.spec.levels:
        privacy.append(("Declared levels", "; ".join(f"{k}: {list(v)}" for k, v in res.spec.levels.items())))
    privacy += [("Caveat", c) for c in spent.caveats]
    if res.hyperparameters:
        privacy.append(("Hyperparameters", ", ".join(f"{k}={v}" for k, v in res.hyperparameters.items())))

    ci = res.conf_int(alpha)
    low, high = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
    coefficients = pd.DataFrame(
        {
            "coef": res.params.to_numpy(),
            "std err": res.bse.to_numpy(),
            "z": res.tvalues.to_numpy(),
            "P>|z|": res.pvalues.to_numpy(),
            low: ci["lower"].to_numpy(),
            high: ci["upper"].to_numpy(),
        },
        index=res.term_names,
    )
    stats = tuple((name, _stat_text(value)) for name, value in res.noisy_stats.items())
    notes = [res.se_note]
    if res.declared_bounds:
        notes.append("Data were clipped to the declared bounds; estimates are in the data's units.")
    if res.failed:
        notes.insert(0, "The mechanism failed; the privacy budget was still spent. " + (res.reason or ""))
    return Summary(
        title=TITLES.get(res.estimator, "DP Regression Results"),
        model=model,
        privacy=tuple(privacy),
        coefficients=coefficients,
        noisy_stats=stats,
        notes=tuple(notes),
    )
