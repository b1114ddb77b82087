"""The mechanisms ``method="auto"`` chooses among, when each applies, and the dimension its error grows with.

Only mechanisms whose guarantee is proven for the sampler as implemented are
candidates (docs/DESIGN.md section 2): KNG samples by MCMC with two or more
design columns, so it is a candidate only for an intercept alone (a private
quantile or mean, sampled exactly). NoisyStats is a candidate twice: as in
the paper, which fails when its noisy S_xx is not positive definite, and
repaired, which never fails (``singular="repair"``).

``Candidate.dimension`` places a design on the continuous reference grid of
dpstats/planning/error_model.py (d regressors). Designs of the calibrated
categorical family (an intercept, one continuous regressor and one categorical
term) are predicted from their own grid at their
number of levels instead, and the dimension is not used; for other designs
with categorical terms it is an extrapolation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from .facts import PublicFacts

TUKEY_DELTA = 1e-6
"""The delta the error model of the Tukey mechanism is calibrated at."""


@dataclass(frozen=True)
class Candidate:
    """One configuration auto may choose: a registered mechanism with options, for one estimator."""

    label: str
    method: str
    estimator: str
    dimension: Callable[[PublicFacts], float]
    options: Mapping[str, object] = field(default_factory=dict)
    max_slopes: int | None = None
    delta: float = 0.0
    biased: bool = False
    """Whether its fits keep a bias their intervals do not cover (the perturbed histogram's binning:
    dpstats/mechanisms/histogram/cell_fits.py; Theil-Sen's line: dpstats/mechanisms/theilsen/mechanism.py);
    auto takes such a candidate only where no other is usable."""
    bias_calibrated: bool = True
    """Whether the error table measures that bias (in its large-eps cells), so that a prediction includes it.
    Theil-Sen's gap from least squares is nil on the table's reference designs (y linear in x, symmetric
    errors) and not on real data: its predictions leave it out, and it never counts as negligible."""
    whole_units: bool = False
    """Whether its batches hold whole units when the privacy unit is one of k rows (Tukey depth:
    dpstats/mechanisms/tukey/models.py), so that a unit costs it what a row does (:meth:`at_unit_level`)."""

    def at_unit_level(self, facts: PublicFacts) -> PublicFacts:
        """The facts its error is read at when one unit holds up to k rows: eps / k where a unit moves k rows
        of its sums (group privacy); for batches of whole units the whole eps, at n = the number of units (at
        most one batch per unit, and a unit's correlated rows tell a batch about as much as one row of
        between-unit variation: a cautious reading)."""
        if facts.unit_rows == 1:
            return facts
        if self.whole_units:
            return replace(facts, n=min(facts.n, facts.units or facts.n))
        return replace(facts, eps=facts.eps / facts.unit_rows)

    def min_rows(self, d: int) -> int:
        """The smallest n the calibration simulates at dimension d."""
        return 30 if self.method != "tukey" else max(30, 20 * (d + 1))

    def refusal(self, facts: PublicFacts) -> str | None:
        """Why the candidate does not apply to ``facts`` (None when it does)."""
        if facts.estimator != self.estimator:
            return f"fits {self.estimator}"
        if self.max_slopes is not None and facts.slopes > self.max_slopes:
            return f"fits at most {self.max_slopes} regressor(s)"
        if not facts.intercept and self.method in ("theilsen", "gradient"):
            return "needs an intercept"
        if self.delta > 0 and facts.delta == 0:
            return "needs delta > 0 (approximate DP)"
        if facts.slopes == 0:
            return "needs a regressor"
        return None


def _slopes(facts: PublicFacts) -> float:
    return float(facts.slopes)


def _noisystats(facts: PublicFacts) -> float:
    """With categorical blocks the structured release's noise grows with the terms, not the levels (extrapolated)."""
    return float(facts.continuous + len(facts.block_sizes)) if facts.structured else float(facts.slopes)


def _variables(facts: PublicFacts) -> float:
    return float(max(facts.variables, 1))


def _one(facts: PublicFacts) -> float:
    return 1.0


CANDIDATES: tuple[Candidate, ...] = (
    Candidate("noisystats", "noisystats", "ols", _noisystats),
    Candidate("theilsen", "theilsen", "ols", _one, max_slopes=1, biased=True, bias_calibrated=False),
    Candidate("gradient", "gradient", "ols", _one, max_slopes=1),
    Candidate("histogram", "histogram", "ols", _variables, biased=True),
    Candidate("tukey", "tukey", "ols", _slopes, delta=TUKEY_DELTA, whole_units=True),
    Candidate("histogram (median)", "histogram", "quantreg", _variables, biased=True),
    Candidate("noisystats (repaired)", "noisystats", "ols", _noisystats, options={"singular": "repair"}),
    Candidate("tukey (median)", "tukey", "quantreg", _slopes, delta=TUKEY_DELTA, whole_units=True),
)
"""The calibrated candidates, in order of preference on ties.

NoisyStats with ``singular="repair"`` (dpstats/mechanisms/noisystats/repair.py)
never fails; where the paper's NoisyStats succeeds the two mostly agree, and
the paper's comes first. The candidates added after the first calibration
(the repaired NoisyStats, then the Tukey mechanism on batch median
regressions, dpstats/mechanisms/tukey/quantile_models.py) come last, in the
order they were added, so that the calibration's continuous cells (seeded by
their indices in benchmarks/calibrate_error_model.py's grid) of the others are
those of the table's. With categorical terms both NoisyStats candidates run the
release of dpstats/mechanisms/noisystats/structured.py, whose noise does not
grow with the levels; before that release coded the largest factor in full and
centred the columns, the repair's error grew with the levels (2.7 times the
histogram's with 20 levels at n = 5,000 and eps = 2) and it was not a
candidate there.
"""


def label_of(method: str, options: Mapping[str, object], estimator: str) -> str | None:
    """The label of the candidate that runs ``method`` with ``options`` for ``estimator`` (None: no candidate)."""
    return next(
        (c.label for c in CANDIDATES if (c.method, dict(c.options), c.estimator) == (method, dict(options), estimator)),
        None,
    )
