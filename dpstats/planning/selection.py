"""The rule of ``method="auto"``: the smallest predicted error among applicable, proven mechanisms.

1. The candidates (dpstats/planning/candidates.py) that apply to the call's
   public facts: the estimator, the number of regressors, an intercept, delta.
2. Their predictions (dpstats/planning/error_model.py), each scenario's
   deviation priced by its failure rate f (:func:`failure_price`): a failure
   spends the budget and returns nothing, so it counts as an infinite error,
   as in Alabi et al. 2022's C(68)/sigma, which the table's deviation predicts.
   The 68th percentile of the outcomes is then the successes' quantile at
   0.68 / (1 - f), infinite from f = 0.32. (Dropping every candidate predicted
   to fail in more than 1% of calls in some scenario, the rule before, left
   the histogram out at n = 30 and eps = 1 for its 17% in the skewed scenario
   alone, where it errs least in the four others and on the Alabi et al. grid.)
   If some candidate whose fits
   keep no uncovered bias is usable (predicted within ``USABLE_REL`` standard
   errors of the non-private fit), the biased ones (the perturbed histogram's
   binning; Theil-Sen's line, which is least squares' only for y linear in x
   with symmetric errors) leave too: an interval is a promise (docs/DESIGN.md section 2).
   A biased candidate whose whole predicted error, its bias floor included
   (the table's large-eps cells measure it; not Theil-Sen's, whose gap from
   least squares the reference designs do not have), is at most ``NEGLIGIBLE_REL``
   standard errors stays: a bias that small leaves a 95% interval's coverage
   at 0.92 or more, and without it auto would trade the histogram's 0.01-0.08
   standard errors on engel's median at eps = 1e9 for Tukey's 1.3-2.3. On a
   real design the cells measure each fit against least squares, its bias
   included, so a biased candidate whose bias is calibrated stays (its fits
   still say "biased"); Theil-Sen's is not, and the rule stands for it.
3. The score of a candidate is the geometric mean over the reference
   scenarios of its predicted deviation over the best one in that scenario
   (its average log-regret): how the data fill the bounds is not public, so
   the choice must do well in every scenario, not in one.
   On a real design (dpstats/planning/tables.py) the score is its predicted
   worst relative error over the coefficients its data determine well (|t| >= 5):
   its cells measure every coefficient, and a table is read by all of them,
   not by the first (on CASchools at eps = 1 the first slope's error chose
   NoisyStats at 76% off on lunch's coefficient, where the histogram was 25% off).
   There each candidate is scored at the budget, at most the call's, its
   prediction is best at (:func:`cheapest`), which auto then spends.
4. The smallest score wins; ties go to the candidates' order.

Groups read side by side (a grouped call, ``PublicFacts.side_by_side``) are
judged by their worst fits, not their typical one: a map or a ranking of small
areas is led by its extremes, and an average over them by its outliers. There
auto ranks by the tail (:func:`tail_scores`): each candidate's predicted 90th
percentile of the deviation, a failed fit counting as the worst fit that
answered (a group with no estimate is read as badly as the worst one), so a
failure is priced in the tail rather than by its C(68). With
the data's spread released (dpstats/groups/spread.py), only the scenarios
whose noise level and regressor variance are the nearest to the released
ranges are weighed (those of the noise level alone where no scenario matches
both). Step 2's rule on biased candidates applies unchanged.

Quantile regression with an intercept alone (a private quantile) keeps KNG, which
samples that density exactly, in integer arithmetic (Reimherr & Awan 2019, section 4.5;
dpstats/mechanisms/kng/exact_quantile.py).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from .candidates import CANDIDATES, Candidate
from .error_model import Prediction, error_term, error_unit, predict, reference
from .facts import DataSpread, PublicFacts

C68 = 0.68
"""The quantile of the error that the table's deviations are (Alabi et al. 2022's C(68)/sigma)."""
USABLE_REL = 2.0
"""A prediction is usable when its privacy error is at most this many standard errors of the non-private fit."""
NEGLIGIBLE_REL = 0.5
"""A biased candidate predicted within this many standard errors keeps its place (module docstring, step 2)."""


@dataclass(frozen=True)
class Choice:
    """What auto chose, why, and the predictions it compared (public, printable)."""

    method: str
    options: dict
    reason: str
    predictions: tuple[Prediction, ...]
    refusals: tuple[tuple[str, str], ...]
    eps: float | None = None
    """The budget to spend where it is below the call's (a real design on which more is predicted no better),
    else None: all of it."""


def scores(predictions: list[Prediction]) -> np.ndarray:
    """Each prediction's geometric-mean regret over the scenarios (1 = best in every scenario)."""
    dev = np.array([p.dev for p in predictions])
    best = dev.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(np.isfinite(best), dev / best, 1.0)  # a scenario where every candidate fails ranks none
        return np.exp(np.mean(np.log(ratio), axis=1))


def failure_price(failures: np.ndarray) -> np.ndarray:
    """How much a failure rate f raises the 68th percentile of a scenario's error when a failure counts as an
    infinite error (module docstring, step 2): the successes' quantile at 0.68 / (1 - f) over their 68th
    percentile, for a half-normal error (a deviation's absolute value); infinite from f = 0.32."""
    surviving = 1.0 - np.asarray(failures, dtype=float)
    level = np.divide(C68, surviving, out=np.full(surviving.shape, np.inf), where=surviving > 0.0)
    inside = np.minimum(level, 1.0 - 1e-12)
    return np.where(level < 1.0, stats.norm.ppf((1.0 + inside) / 2.0) / stats.norm.ppf((1.0 + C68) / 2.0), np.inf)


def priced(prediction: Prediction) -> Prediction:
    """The prediction with each scenario's deviation, error in standard errors and worst relative error
    raised by its :func:`failure_price`."""
    price = failure_price(prediction.failures if prediction.failures is not None else (prediction.failure,))

    def raised(values: tuple[float, ...] | None) -> tuple[float, ...] | None:
        return None if values is None else tuple(map(float, np.asarray(values) * price))

    return replace(prediction, dev=raised(prediction.dev), rel=raised(prediction.rel), worst=raised(prediction.worst))


def choose(facts: PublicFacts, allowed: Collection[str] | None = None, within: float | None = None) -> Choice:
    """The mechanism for ``facts`` (module docstring), among the methods ``allowed`` (None: all of them;
    with ``unit=``, those that cluster their standard errors by unit: dpstats/mechanisms/units.py) and,
    with ``within``, among those predicted to err by at most that on the first regressor in a typical
    scenario (a grouped call's ``target=``: dpstats/groups/auto.py)."""
    allowed = None if allowed is None else frozenset(allowed)
    if (
        facts.estimator == "quantreg"
        and facts.slopes == 0
        and facts.intercept
        and (allowed is None or "kng" in allowed)
    ):
        reason = "an intercept alone: KNG samples its density exactly (Reimherr & Awan 2019, section 4.5)"
        return Choice("kng", {}, reason, (), ())
    applicable, refusals = [], []
    for candidate in CANDIDATES:
        if allowed is not None and candidate.method not in allowed:
            continue
        refusal = candidate.refusal(facts)
        if refusal is None:
            prediction = predict(candidate, facts)
            if prediction.refused:
                refusals.append((candidate.label, "refuses this design's shape"))
            else:
                applicable.append((candidate, prediction))
        elif candidate.estimator == facts.estimator:
            refusals.append((candidate.label, refusal))
    if within is not None:
        for candidate, prediction in applicable:
            error = prediction.typical_dev * error_unit(facts)
            if not error <= within:
                refusals.append((candidate.label, f"predicted to err by {error:.3g} on {error_term(facts)}"))
        applicable = [(c, p) for c, p in applicable if p.typical_dev * error_unit(facts) <= within]
        if not applicable:
            raise ValueError(f"no mechanism is predicted within target={within:g}: {dict(refusals)}")
    if not applicable:
        raise ValueError(f"no mechanism fits this design: {dict(refusals)}")
    if all(p.worst is not None for _, p in applicable):
        applicable = [(c, cheapest(c, facts, p, within)) for c, p in applicable]
    by_tail = facts.side_by_side and all(p.tail is not None for _, p in applicable)
    reliable = applicable if by_tail else [(c, priced(p)) for c, p in applicable]
    if any(not c.biased and p.typical_rel <= USABLE_REL for c, p in reliable):
        reliable = [
            (c, p)
            for c, p in reliable
            if not c.biased or (c.bias_calibrated and (p.worst is not None or p.typical_rel <= NEGLIGIBLE_REL))
        ]
    if by_tail:
        score, what = tail_scores([p for _, p in reliable], facts.spread), "90th percentile of the error"
    elif all(p.worst is not None for _, p in reliable):
        ranked = [replace(p, dev=p.worst) for _, p in reliable]
        score, what = scores(ranked), "relative error of the worst well-determined coefficient"
    else:
        score, what = scores([p for _, p in reliable]), "error"
    winner = reliable[int(np.argmin(score))][0]
    prediction = next(p for c, p in applicable if c is winner)
    others = ", ".join(f"{c.label} {s:.2g}" for (c, _), s in zip(reliable, score, strict=True) if c is not winner)
    reason = (
        f"smallest predicted {what} from public facts (n, eps, the design's shape): deviation from the "
        f"non-private fit {prediction.typical_rel:.2g} of its standard error in a typical scenario, "
        f"failure {prediction.failure:.0%}; relative to it" + (f": {others}" if others else ": no other candidate")
    )
    if prediction.eps is not None:
        reason += (
            f". It spends eps = {prediction.eps:g} of the {facts.eps:g} given: on this design a larger budget is "
            f"predicted no better for {winner.label}"
        )
    return Choice(
        winner.method, dict(winner.options), reason, tuple(p for _, p in applicable), tuple(refusals),
        prediction.eps,
    )  # fmt: skip


def cheapest(
    candidate: Candidate, facts: PublicFacts, prediction: Prediction, within: float | None = None
) -> Prediction:
    """The candidate's prediction at the budget, at most the call's, where its predicted worst relative error
    is the smallest (``Prediction.eps`` set where that is below the call's eps), among the budgets whose
    prediction meets the call's ``target`` (``within``) where it has one and errs in standard errors by no
    more than the whole budget's (CPS1988's median: the histogram's worst coefficient at eps = 0.1 was within
    a hundredth of its error at eps = 1, at 14 standard errors against 8).

    On a real design the calibration measures each mechanism at every eps of its grid, and some are not
    monotone there: the histogram's median on engel errs by 51% at eps = 5 and 57% at eps = 20 (its cells and
    their noise both change with eps). Spending less is always allowed (the guarantee only improves), so auto
    spends the budget its prediction is best at, and its predicted error never grows with eps.
    """
    grid, _ = reference(candidate, facts)
    best = prediction
    for eps in (float(f"{e:.12g}") for e in np.exp(grid.axes[1])):  # the grid's eps, as calibrated
        if eps >= facts.eps:
            break
        cheaper = predict(candidate, replace(facts, eps=eps))
        if within is not None and not cheaper.typical_dev * error_unit(facts) <= within:
            continue
        if (
            cheaper.worst is not None
            and np.median(priced(cheaper).worst) < np.median(priced(best).worst)
            and cheaper.typical_rel <= prediction.typical_rel
        ):
            best = replace(cheaper, eps=eps)
    return best


def choose_for_target(facts: PublicFacts, allowed: Collection[str] | None, target: float | None) -> Choice:
    """auto's choice for a call with ``target`` (the first regressor's largest acceptable error): among the
    candidates predicted within it where some is, else the unconstrained choice (which the plan then refuses,
    dpstats/planning/refusal.py, unless the call forces it)."""
    if target is not None:
        try:
            return choose(facts, allowed, within=target)
        except ValueError:
            pass
    return choose(facts, allowed)


def nearest_levels(levels: tuple[float, ...], within: tuple[float, float]) -> np.ndarray:
    """Which of the scenarios' ``levels`` is the nearest, on the log scale, to some value in the range ``within``."""
    logs = np.log(np.asarray(levels))
    distinct = np.unique(logs)
    nearest = [distinct[np.argmin(np.abs(distinct - np.log(max(end, 1e-12))))] for end in within]
    return (logs >= nearest[0]) & (logs <= nearest[1])


def matching_scenarios(prediction: Prediction, spread: DataSpread | None) -> np.ndarray:
    """The scenarios that match a released spread on both axes (module docstring); where none matches both,
    those that match its noise; all of them without a spread."""
    if spread is None or not prediction.noise:
        return np.ones(len(prediction.dev), dtype=bool)
    noise = nearest_levels(prediction.noise, spread.noise)
    both = noise & nearest_levels(prediction.fill, spread.fill)
    return both if both.any() else noise


def tail_scores(predictions: list[Prediction], spread: DataSpread | None) -> np.ndarray:
    """Each prediction's geometric-mean regret of its tail over the scenarios that match the spread."""
    keep = matching_scenarios(predictions[0], spread)
    tails = [Prediction(p.label, tuple(np.asarray(p.tail)[keep]), (), p.failure) for p in predictions]
    return scores(tails)
