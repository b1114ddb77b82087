"""auto's rule for a binary-response model (``dp_logit``, ``dp_probit``), from public facts only.

The error model of dpstats/planning/error_model.py is calibrated on
least-squares and quantile designs; its binary table is not built yet, so a
binary call chooses by a fixed rule among the proven mechanisms and makes no
prediction (its summary says so):

* DP Newton's method (dpstats/mechanisms/newton/) where ``n eps / p^2`` is at
  least ``NEWTON_MIN``, p the design's columns: its score and curvature noise
  grow with p and p^2 against n, and below that its early steps wander
  (benchmarks/bench_logit.py: CPS1988, 28,155 rows and p = 5, is above at eps = 1;
  statsmodels' fair, 6,366 rows and p = 7, below at eps = 5, where the
  histogram's error is a fifth of Newton's). On simulated logits
  (benchmarks/bench_binary_rule.py: base rates 5-50%, 2 or 5 regressors,
  n 2,000-50,000, eps 1 and 5) Newton's median slope error above that
  load is 0.03-1.3 of the MLE's standard errors (the largest at a 5% base rate) and
  below the histogram's in 20 of 24 cells, whose binning bias grows with n (its intervals covered 0.24-0.5 at
  n = 50,000 with 5 regressors);
* otherwise the perturbed histogram (Lei 2011, section 3.1), pure and proven,
  down to ``n eps / p^2 = REFUSE_BELOW``: below it auto refuses before spending
  (``RefusedBeforeSpending``, with the eps and the n that would reach it), unless
  forced. On the four public regressions of vignettes/08_binary_outcomes.md the
  histogram's fits below it missed the main coefficient by 59-98% (flagged biased);
  above it, by 5% on fair (load 650) but by 63% on HMDA (load 744, flagged): a rule
  on the load alone cannot see how a design's cells fill, which a calibrated error
  model would.

Tukey depth over batch MLEs (delta > 0) is not a candidate: its batches need
about 20 rows per coefficient not to separate, and propose-test-release then
passes only from about 80,000 rows at four coefficients and eps = 1
(benchmarks/bench_tukey_logit.py), where Newton's load is far above its threshold.
Objective perturbation and KNG sample continuous laws in floating point (their
releases are not proven, dpstats/privacy/noise.py's ``FLOAT_CAVEAT``): auto never
chooses them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from .facts import PublicFacts
from .refusal import RefusedBeforeSpending
from .selection import Choice

NEWTON_MIN = 1000.0
"""The least ``n eps / p^2`` at which auto takes DP Newton's method (module docstring)."""
REFUSE_BELOW = 300.0
"""Below this ``n eps / p^2`` auto refuses a binary call unless forced (module docstring)."""
RULE = "the binary rule of dpstats/planning/binary_choice.py; no calibrated prediction"


@dataclass(frozen=True)
class BinaryPlan:
    """What a refused binary call would need: the eps at its n, the n at its eps (public facts only)."""

    n: int
    eps: float
    columns: int

    def __str__(self) -> str:
        need = REFUSE_BELOW * self.columns**2
        newton = NEWTON_MIN * self.columns**2
        return (
            f"binary rule (dpstats/planning/binary_choice.py), p = {self.columns} design columns:\n"
            f"  the histogram: eps >= {need / self.n:.3g} at n = {self.n}, or n >= {need / self.eps:.0f} at "
            f"eps = {self.eps:g}\n"
            f"  DP Newton: eps >= {newton / self.n:.3g} at n = {self.n}, or n >= {newton / self.eps:.0f} at "
            f"eps = {self.eps:g}"
        )


def choose_binary(facts: PublicFacts, allowed: Collection[str] | None = None, force: bool = False) -> Choice:
    """The mechanism for a binary-response call (module docstring), among ``allowed`` (None: all); raises
    ``RefusedBeforeSpending`` below ``REFUSE_BELOW`` unless ``force``."""
    columns = facts.slopes + int(facts.intercept)
    load = facts.n * facts.eps / columns**2
    if load >= NEWTON_MIN and (allowed is None or "newton" in allowed):
        reason = f"n eps / p^2 = {load:.0f} >= {NEWTON_MIN:g}: DP Newton's method, pure and proven ({RULE})"
        return Choice("newton", {}, reason, (), ())
    if allowed is not None and "histogram" not in allowed:
        raise ValueError(f"no mechanism among {sorted(allowed)} fits this binary response")
    if load < REFUSE_BELOW and not force:
        reason = f"n eps / p^2 = {load:.3g} is below {REFUSE_BELOW:g}, where binary fits miss by half or more"
        raise RefusedBeforeSpending(reason, BinaryPlan(facts.n, facts.eps, columns))
    reason = f"n eps / p^2 = {load:.0f}: the perturbed histogram (Lei 2011, section 3.1), pure and proven ({RULE})"
    return Choice("histogram", {}, reason, (), ())
