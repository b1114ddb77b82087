"""Refusing before spending (docs/DESIGN.md section 2): ``method="auto"`` declines a call whose best answer
the plan predicts to be uninformative, before any data are read and before any budget is charged.

The verdict reads the call's public facts only (n, eps, delta, the formula and the declarations, through
:func:`~dpstats.planning.comparison.plan_facts`) and the error model's prediction for the mechanism the
call would run (dpstats/planning/error_model.py). It is negative when that mechanism is predicted

1. to fail more often than not (``MAX_FAILURE``): a failure spends the budget and answers nothing;
2. to err by more than the user's ``target``: the largest acceptable error of the first regressor's
   coefficient in the user's units, as :func:`~dpstats.planning.comparison.compare_methods` takes it;
3. without a target, on a real design whose cells measure every coefficient (dpstats/planning/tables.py),
   to err on some coefficient the data determine well (non-private |t| >= 5) by more than ``MAX_WORST`` times
   that coefficient's size: the estimate would not even tell its sign. AER's CPS1985 wage regression at eps = 1
   is predicted at 1.9 (realized 0.9 to 1.9 over issue 42's runs: gender's coefficient);
4. otherwise without a target, to err by more than ``MAX_REL`` standard errors of the non-private fit in a typical
   scenario: its interval would be about ten times the one a non-private analysis publishes. The README's
   demo (engel, eps = 1) is predicted at 5.4 and its interval is informative; AER's CPS1985 wage
   regression (10 coefficients, eps = 1) erred by 10 to 13 standard errors while the histogram binned the
   wage rather than its log (dpstats/frontend/axes.py).

auto then raises :class:`RefusedBeforeSpending`, which carries the plan (each mechanism's prediction and
the eps or n it needs). ``force=True``, or an explicit ``method=``, fits anyway and the verdict goes into
the summary's status line. The rule is only as good as the predictions on real designs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .candidates import CANDIDATES, Candidate, label_of
from .comparison import MethodComparison, compare_methods, plan_facts
from .error_model import Prediction, error_term, error_unit, predict
from .facts import PublicFacts
from .selection import choose_for_target

MAX_FAILURE = 0.5
"""A mechanism predicted to fail more often than this gives no answer worth the budget."""
MAX_WORST = 1.0
"""Without a target, on a real design: the largest predicted relative error of a well-determined coefficient."""
MAX_REL = 10.0
"""Without a target: the largest predicted error, in standard errors of the non-private fit, worth the budget."""


class RefusedBeforeSpending(ValueError):
    """``method="auto"`` declined the call before reading any data; nothing was charged.

    ``reason`` says which rule refused it; ``plan`` is the :class:`~dpstats.planning.comparison.MethodComparison`
    of the call (every mechanism's predicted error, the eps and n each would need), or for a binary call the
    :class:`~dpstats.planning.binary_choice.BinaryPlan` of its rule.
    """

    def __init__(self, reason: str, plan: MethodComparison | object) -> None:
        super().__init__(
            f"refused before spending: {reason}. No data were read and no budget was charged; fit anyway "
            f"with force=True or an explicit method=.\n\n{plan}"
        )
        self.reason = reason
        self.plan = plan


def check_target(target: object) -> float | None:
    """``target``: None, or a positive finite number (an error in the user's units)."""
    if target is None:
        return None
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0 < float(target) < math.inf:
        raise ValueError("target must be None or a positive finite number (an error in the coefficient's units)")
    return float(target)


def verdict(prediction: Prediction, facts: PublicFacts, target: float | None) -> str | None:
    """Why ``prediction`` is not worth the budget (module docstring), or None when it is."""
    if prediction.failure > MAX_FAILURE:
        return f"{prediction.label} is predicted to fail in {prediction.failure:.0%} of calls"
    if target is not None:
        error = prediction.typical_dev * error_unit(facts)
        if not error <= target:
            term = error_term(facts)
            return f"{prediction.label} is predicted to err by {error:.3g} on {term}, above target={target:g}"
        return None
    if prediction.worst is not None and float(np.median(prediction.worst)) > MAX_WORST:
        return (
            f"{prediction.label} is predicted to err by {float(np.median(prediction.worst)):.0%} of the size of "
            f"some coefficient the data determine well (|t| >= 5), more than {MAX_WORST:.0%}"
        )
    if prediction.typical_rel > MAX_REL:
        return (
            f"{prediction.label} is predicted to err by {prediction.typical_rel:.3g} standard errors of the "
            f"non-private fit, more than {MAX_REL:g}"
        )
    return None


def _candidate(method: str, options: Mapping[str, object], estimator: str) -> Candidate | None:
    """The calibrated candidate an explicit call runs: the same mechanism, whose options the call's (its
    defaults filled in) include, the most specific one where several do; None where none is calibrated."""
    matches = [
        c
        for c in CANDIDATES
        if (c.method, c.estimator) == (method, estimator) and all(options.get(k) == v for k, v in c.options.items())
    ]
    return max(matches, key=lambda c: len(c.options), default=None)


def _prediction(
    facts: PublicFacts,
    method: str,
    options: Mapping[str, object],
    allowed: Collection[str] | None = None,
    target: float | None = None,
) -> Prediction | None:
    """The prediction for the mechanism the call runs (auto's choice among ``allowed``, for ``target``), None
    where the model has none."""
    if method == "auto":
        choice = choose_for_target(facts, allowed, target)
        label = label_of(choice.method, choice.options, facts.estimator)
        return next((p for p in choice.predictions if p.label == label), None)
    candidate = _candidate(method, options, facts.estimator)
    if candidate is None or candidate.refusal(facts) is not None:
        return None
    prediction = predict(candidate, facts)
    return None if prediction.refused else prediction


@dataclass(frozen=True)
class PlannedCall:
    """The public inputs of one call that the plan judges (``target``: None for the default rule)."""

    formula: str
    n: int
    eps: float
    delta: float
    bounds: Mapping[str, Sequence[float]] | None
    levels: Mapping[str, Sequence] | None
    estimator: str
    se_share: float | None
    target: float | None
    allowed: Collection[str] | None = None
    """The methods auto may choose (None: all; with ``unit=``, the unit-native ones)."""
    unit_rows: int = 1
    """The call's ``max_rows`` when its privacy unit is one of several rows (``PublicFacts.unit_rows``)."""
    units: int | None = None
    """Then the number of units (``PublicFacts.units``)."""

    def verdict(self, method: str, options: Mapping[str, object], columns: Sequence[str]) -> str | None:
        """The verdict on the call run by ``method`` (module docstring); ``columns`` are the data's names."""
        facts = plan_facts(
            self.formula, self.n, self.eps, self.bounds, self.levels, self.estimator, self.delta, self.se_share,
            columns=columns,
        )  # fmt: skip
        facts = replace(facts, unit_rows=self.unit_rows, units=self.units)
        prediction = _prediction(facts, method, options, self.allowed, self.target)
        return None if prediction is None else verdict(prediction, facts, self.target)

    def refusal(self, reason: str) -> RefusedBeforeSpending:
        """The error auto raises, with the call's whole plan."""
        plan = compare_methods(
            self.formula, self.n, self.eps, self.bounds, self.levels,
            estimator=self.estimator, delta=self.delta, target=self.target, se_share=self.se_share,
            max_rows=self.unit_rows, units=self.units, only=self.allowed,
        )  # fmt: skip
        return RefusedBeforeSpending(reason, plan)
