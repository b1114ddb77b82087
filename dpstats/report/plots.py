"""Figures: coefficient plots of several fits, and the privacy-utility trade-off of a planned call.

matplotlib is the optional extra ``plot`` (``pip install "dpstats[plot]"``),
imported when a figure is drawn. The figures are made without pyplot (a
:class:`matplotlib.figure.Figure` on the Agg canvas), so no window opens and
no global state changes; ``fig.savefig("coef.png")`` writes them, and a
notebook shows them.

:func:`coefplot` draws what :func:`dpstats.table` tabulates (the same
columns, terms and intervals: ``res.conf_int()``, a bootstrap interval where
the release carries replicates); :func:`tradeoff_plot` draws
:func:`dpstats.planning.tradeoff.error_curve`, the error model of
``method="auto"`` over eps. Both are post-processing of public values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..planning.selection import USABLE_REL
from ..planning.tradeoff import EPS_CURVE, error_curve
from ..uncertainty.intervals import check_alpha
from .tables import collect, select_terms

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _figure(ax: Any, figsize: tuple[float, float]) -> tuple[Any, Any]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError('plots need matplotlib: pip install "dpstats[plot]"') from None
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def coefplot(
    models: Any,
    *,
    labels: Sequence[str] | None = None,
    rename: Mapping[str, str] | None = None,
    order: Sequence[str] = (),
    drop: Sequence[str] = ("Intercept", "(Intercept)"),
    collapse: Mapping[str, str | Sequence[str]] | None = None,
    alpha: float = 0.05,
    title: str = "",
    ax: Any = None,
    figsize: tuple[float, float] | None = None,
) -> Any:
    """Each fit's estimates with their ``1 - alpha`` intervals, one row per term, the fits side by side.

    ``models``, ``labels``, ``rename``, ``order``, ``drop`` and ``collapse`` are
    :func:`dpstats.table`'s (a collapsed block is not drawn; the intercept is
    dropped by default, its scale being another). ``ax``: draw into these axes
    instead of a new figure. Returns the :class:`matplotlib.figure.Figure`.
    """
    alpha = check_alpha(alpha)
    rename = dict(rename or {})
    _, columns, names = collect(models, labels, alpha)
    present = {t for c in columns for t in c.terms}
    terms = select_terms(columns, list(order), [t for t in drop if t in present], dict(collapse or {}), rename)
    if not terms:
        raise ValueError("no term is left to plot (the intercept is dropped by default: drop=())")
    own = ax is None
    fig, ax = _figure(ax, figsize or (6.4, 1.8 + 0.45 * len(terms) * max(1.0, len(columns) / 3)))
    rows = np.arange(len(terms), dtype=float)
    offsets = np.linspace(-0.3, 0.3, len(columns)) if len(columns) > 1 else np.zeros(1)
    incomplete = False
    for j, column in enumerate(columns):
        index = [column.terms.index(t) if t in column.terms else -1 for t in terms]
        has = np.array([i >= 0 for i in index])
        pick = np.array([max(i, 0) for i in index])
        y = rows[has] + offsets[j]
        estimate, lower, upper = (v[pick][has] for v in (column.estimate, column.lower, column.upper))
        finite = np.isfinite(lower) & np.isfinite(upper)
        incomplete |= bool((~finite & np.isfinite(estimate)).any())
        colour = f"C{j % 10}"
        ax.hlines(y[finite], lower[finite], upper[finite], color=colour, linewidth=1.6)
        name = names[j] if names is not None else f"({j + 1}) {column.estimator}"
        ax.plot(estimate, y, MARKERS[j % len(MARKERS)], color=colour, label=f"{name}, eps = {column.eps:g}")
    ax.axvline(0.0, color="0.5", linewidth=0.8, linestyle="--")
    ax.set_yticks(rows, [rename.get(t, t) for t in terms])
    ax.set_ylim(len(terms) - 0.5, -0.5)
    note = " (some intervals are infinite or not reported)" if incomplete else ""
    ax.set_xlabel(f"estimate and {1 - alpha:.0%} interval: sampling error and privacy noise{note}")
    if own:  # below the axes, where it hides no interval
        fig.legend(loc="outside lower center", ncols=min(3, len(columns)), fontsize="small", frameon=False)
    else:
        ax.legend(loc="best", fontsize="small")
    if title:
        ax.set_title(title)
    return fig


def tradeoff_plot(
    formula: str,
    n: int,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    *,
    eps: Sequence[float] = EPS_CURVE,
    estimator: str = "ols",
    delta: float = 0.0,
    ax: Any = None,
    figsize: tuple[float, float] = (6.4, 4.4),
) -> Any:
    """The privacy-utility trade-off of a planned call: predicted error against eps, per mechanism.

    The error is that of the first regressor's coefficient in standard errors
    of the non-private fit (the error model's typical scenario,
    :func:`~dpstats.planning.tradeoff.error_curve`); a thick line marks the
    mechanism ``method="auto"`` would choose at each eps, a dotted line the
    usable level (:data:`~dpstats.planning.selection.USABLE_REL` standard
    errors). auto averages its regret over the error model's reference
    scenarios, while the lines show the typical (median) one, so auto's
    choice need not be the lowest line. Public facts only: no data, no
    budget. Returns the Figure.
    """
    curve = error_curve(formula, n, bounds, levels, eps=eps, estimator=estimator, delta=delta)
    if curve.empty:
        raise ValueError("no mechanism applies to this design (see dpstats.compare_methods)")
    fig, ax = _figure(ax, figsize)
    for j, (method, rows) in enumerate(curve.groupby("method", sort=False)):
        colour = f"C{j % 10}"
        ax.plot(rows["eps"], rows["error / SE"], color=colour, linewidth=1.2, label=method)
        chosen = rows["error / SE"].where(rows["auto"])
        ax.plot(rows["eps"], chosen, color=colour, linewidth=4.0, alpha=0.6)
    ax.axhline(USABLE_REL, color="0.4", linestyle=":", linewidth=1.0)
    ax.annotate(f"{USABLE_REL:g} SE", (curve["eps"].min(), USABLE_REL), xytext=(2, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("eps (privacy budget of the call)")
    ax.set_ylabel("predicted error / non-private SE")
    ax.set_title(f"n = {n:,}: {formula} ({estimator}); thick: auto's choice", fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    return fig
