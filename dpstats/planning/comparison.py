"""``compare_methods``: the plan before spending -- predicted errors, failure rates and the budget each needs.

Everything here reads public facts only (the formula, n, eps, delta, the
declared bounds and levels): it spends no budget and may be run as often as
wanted, before the data are touched. It is a DP power calculation: for each
mechanism auto may choose, the predicted error (dpstats/planning/error_model.py),
and the eps (at this n) and the n (at this eps) at which the predicted error
of the first regressor's coefficient (x's in ``y ~ x + C(g)``, whose dummies
patsy puts first; error_model.error_unit) falls to ``target`` in the user's units,
or, without a target, to the sampling error's order (the privacy error at most
``USABLE_REL`` times the non-private standard error in a typical scenario).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design.units import check_max_rows
from ..frontend.formula import build_design
from ..frontend.grammar import CONTRASTS, MARKERS, NUMPY_MODULES, ROWWISE_FUNCTIONS
from ..frontend.metadata import check_bounds, check_levels
from ..mechanisms.units import unit_native_methods
from ..output.render import markdown_table
from ..privacy.accounting import check_delta, check_eps, check_share
from .candidates import CANDIDATES, label_of
from .error_model import error_unit, predict
from .facts import PublicFacts
from .selection import USABLE_REL, choose_for_target

EPS_GRID = np.logspace(-2, 3, 101)
N_GRID = np.unique(np.logspace(1.5, 7, 111).astype(int))


@dataclass(frozen=True)
class MethodComparison:
    """Predicted errors of every candidate mechanism for one planned call (public: printable)."""

    facts: PublicFacts
    table: pd.DataFrame
    chosen: str | None
    usable: bool
    message: str

    def shown(self) -> pd.DataFrame:
        """The table with its numbers rounded for reading (failure in percent, three significant digits)."""
        out = self.table.copy()
        for column in ("error", "error / SE", "eps needed", "n needed"):
            if column in out:
                out[column] = [f"{v:.3g}" if np.isfinite(v) else "-" for v in out[column]]
        if "failure" in out:
            out["failure"] = [f"{v:.0%}" if np.isfinite(v) else "-" for v in out["failure"]]
        return out.fillna("-")

    def __str__(self) -> str:
        facts = self.facts
        head = f"Plan for n = {facts.n}, eps = {facts.eps:g}" + (f", delta = {facts.delta:g}" if facts.delta else "")
        if facts.unit_rows > 1:
            head += f"; the privacy unit holds up to {facts.unit_rows} rows" + (
                f" ({facts.units} units)" if facts.units else ""
            )
        return "\n".join([head, self.shown().to_string(index=False), self.message])

    def as_markdown(self) -> str:
        """The table as GitHub-flavoured Markdown, with the message below."""
        shown = self.shown().astype(str)
        return "\n".join([*markdown_table(list(shown.columns), shown.values.tolist()), "", self.message])

    def _repr_html_(self) -> str:
        return self.shown().to_html(index=False) + f"<p>{self.message}</p>"


def _prototype(formula: str, bounds: Mapping, levels: Mapping, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Two public rows: every name of the formula (or every one of ``columns``, the data's names, where known)
    at its bounds (1 where none), categorical ones at their levels."""
    if columns is None:
        reserved = set(ROWWISE_FUNCTIONS) | MARKERS | set(CONTRASTS) | set(NUMPY_MODULES)
        names = {name for name in re.findall(r"(?<![.\w])[A-Za-z_]\w*", formula) if name not in reserved}
    else:
        names = set(columns)
    columns = {}
    for name in names:
        if name in levels:
            declared = list(levels[name])
            columns[name] = [declared[0], declared[-1]]
        elif name in bounds:
            columns[name] = [float(bounds[name][0]), float(bounds[name][1])]
        else:
            columns[name] = [1.0, 1.0]
    return pd.DataFrame(columns)


def _needed(values: np.ndarray, predicted: np.ndarray, goal: float) -> float:
    """The smallest grid value from which on every prediction meets ``goal`` (NaN if the last one misses it).

    Not the first value that meets it: in standard errors of the non-private fit, a tiny n can meet a goal
    that larger ones miss, because that standard error is huge there (statsmodels' fair data at eps = 1: the
    first n on the grid, 31, met the repaired NoisyStats' goal, the design's own n = 6,366 missed it).
    """
    meets = predicted <= goal
    if not meets[-1]:
        return float("nan")
    misses = np.nonzero(~meets)[0]
    return float(values[misses[-1] + 1 if misses.size else 0])


def plan_facts(
    formula: str,
    n: int,
    eps: float,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    estimator: str,
    delta: float,
    se_share: float | None = None,
    columns: Sequence[str] | None = None,
) -> PublicFacts:
    """The public facts of a planned call, from the formula and the declarations only (no data; ``columns``,
    the data's column names where a call has data, so that names the formula quotes are found)."""
    if estimator not in ("ols", "quantreg"):
        raise ValueError("estimator must be 'ols' or 'quantreg'")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError("n must be an integer >= 2")
    eps, delta, se_share = check_eps(eps), check_delta(delta), check_share(se_share)
    bounds, levels = check_bounds(bounds), check_levels(levels)
    design, _ = build_design(formula, _prototype(formula, bounds, levels, columns), bounds, levels)
    return dataclasses.replace(PublicFacts.of(design, eps, delta, estimator, se_share), n=int(n))


def compare_methods(
    formula: str,
    n: int,
    eps: float,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    *,
    estimator: str = "ols",
    delta: float = 0.0,
    target: float | None = None,
    se_share: float | None = None,
    max_rows: int = 1,
    units: int | None = None,
    only: Collection[str] | None = None,
) -> MethodComparison:
    """Predicted errors of every mechanism auto may choose, before any budget is spent (module docstring).

    ``max_rows`` and ``units``: a call whose privacy unit holds up to ``max_rows`` of the n rows, in
    ``units`` units (``dp_ols(..., unit=, max_rows=)``); auto then compares the mechanisms that prove
    the unit level themselves, each read as dpstats/planning/candidates.py (``at_unit_level``) says.

    ``target`` is the largest acceptable error of the first regressor's
    coefficient, in the user's units. The table's columns: the mechanism, why
    it does not apply (if so), its predicted failure rate, its predicted error
    of that coefficient (a typical scenario, user's units), the same in
    standard errors of the non-private fit, and the eps and n it needs.
    ``se_share`` is the call's (None: each mechanism's default), which
    decides the budget each point estimate gets. ``only``: the methods the call may choose among (a call with
    survey weights: :func:`dpstats.mechanisms.weighted_methods`), None for all.
    """
    facts = plan_facts(formula, n, eps, bounds, levels, estimator, delta, se_share)
    facts = dataclasses.replace(facts, unit_rows=check_max_rows(max_rows), units=units)
    allowed = None if facts.unit_rows == 1 else unit_native_methods()
    if only is not None:
        allowed = frozenset(only) if allowed is None else frozenset(allowed) & frozenset(only)
    unit = error_unit(facts)
    rows = []
    for candidate in CANDIDATES:
        if candidate.estimator != estimator or (allowed is not None and candidate.method not in allowed):
            continue
        refusal = candidate.refusal(facts)
        prediction = None if refusal else predict(candidate, facts)
        if prediction is not None and prediction.refused:
            refusal = "refuses this design's shape"
        row = {"method": candidate.label, "applies": refusal or "yes"}
        if refusal is None:
            goal_dev = None if target is None else target / unit
            by_eps = [predict(candidate, dataclasses.replace(facts, eps=float(e))) for e in EPS_GRID]
            by_n = [predict(candidate, _at_n(facts, int(m))) for m in N_GRID]
            measure = (lambda p: p.typical_rel) if goal_dev is None else (lambda p: p.typical_dev)
            goal = USABLE_REL if goal_dev is None else goal_dev
            row |= {
                "failure": prediction.failure,
                "error": prediction.typical_dev * unit,
                "error / SE": prediction.typical_rel,
                "eps needed": _needed(EPS_GRID, np.array([measure(p) for p in by_eps]), goal),
                "n needed": _needed(N_GRID.astype(float), np.array([measure(p) for p in by_n]), goal),
            }
        rows.append(row)
    table = pd.DataFrame(rows)
    try:
        choice = choose_for_target(facts, allowed, target)
    except ValueError:
        return MethodComparison(facts, table, None, False, "No mechanism applies to this design.")
    chosen = label_of(choice.method, choice.options, estimator) or choice.method
    table["auto"] = np.where(table["method"] == chosen, "<- auto", "")
    if chosen not in set(table["method"]):
        return MethodComparison(facts, table, chosen, True, f"auto would choose {chosen} ({choice.reason}).")
    spent = next((p for p in choice.predictions if p.label == chosen and p.eps is not None), None)
    if spent is not None:  # auto would spend less than eps on this design (dpstats/planning/selection.cheapest)
        at = table["method"] == chosen
        table.loc[at, ["failure", "error", "error / SE"]] = [spent.failure, spent.typical_dev * unit, spent.typical_rel]
        table["auto"] = np.where(at, f"<- auto (at eps = {spent.eps:g})", "")
    best = table.loc[table["method"] == chosen].iloc[0]
    goal = "the target" if target is not None else f"{USABLE_REL:g} standard errors of the non-private fit"
    usable = best["error"] <= target if target is not None else best["error / SE"] <= USABLE_REL
    if usable:
        message = f"auto would choose {chosen}; its predicted error is within {goal}."
    else:
        eps_text = f"eps >= {best['eps needed']:.3g}" if np.isfinite(best["eps needed"]) else f"eps > {EPS_GRID[-1]:g}"
        n_text = f"n >= {best['n needed']:.3g}" if np.isfinite(best["n needed"]) else f"n > {N_GRID[-1]:.3g}"
        message = (
            f"No mechanism can give a usable answer: auto's choice ({chosen}) is predicted to err by more than "
            f"{goal}. It would need {eps_text} at this n, or {n_text} at this eps."
        )
    return MethodComparison(facts, table, chosen, bool(usable), message)


def _at_n(facts: PublicFacts, n: int) -> PublicFacts:
    """The facts at another n, with as many units per row."""
    units = None if facts.units is None else max(1, round(facts.units * n / facts.n))
    return dataclasses.replace(facts, n=n, units=units)
