"""Privacy budgets: validation, splitting and the record of what a call spent.

Semantics (docs/DESIGN.md section 2): the privacy unit is one row; neighbouring
datasets have the same, public n and differ in one row (replace-one, "bounded"
DP). ``eps`` is the total for a call; a mechanism splits it internally and
reports the split, which always adds up to the ``eps`` the user gave.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

NEIGHBOURS = "replace-one (bounded DP): neighbouring datasets differ in one row; n is public"


def check_eps(eps: object, name: str = "eps") -> float:
    """Validate a privacy parameter: a finite float > 0 (numpy scalars included)."""
    if isinstance(eps, bool | np.bool_) or not isinstance(eps, numbers.Real):
        raise TypeError(f"{name} must be a positive finite number")
    value = float(eps)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number")
    return value


def check_delta(delta: object, name: str = "delta") -> float:
    """Validate delta: a float in [0, 1) (numpy scalars included)."""
    if isinstance(delta, bool | np.bool_) or not isinstance(delta, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1)")
    value = float(delta)
    if not math.isfinite(value) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1)")
    return value


def check_share(share: object, name: str = "se_share") -> float | None:
    """Validate the part of the budget for standard errors: None (the mechanism's default) or in [0, 1)."""
    if share is None:
        return None
    if isinstance(share, bool | np.bool_) or not isinstance(share, numbers.Real):
        raise TypeError(f"{name} must be None or a number in [0, 1)")
    value = float(share)
    if not math.isfinite(value) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be None or a number in [0, 1): the part of eps spent on standard errors")
    return value


def check_budget(eps: object, rho: object) -> tuple[float | None, float | None]:
    """Exactly one of ``eps`` (the call's total) and ``rho`` (for zCDP mechanisms), validated."""
    if (eps is None) == (rho is None):
        raise ValueError("pass exactly one of eps (the call's total budget) and rho (for zCDP mechanisms)")
    return (None, check_eps(rho, "rho")) if eps is None else (check_eps(eps), None)


@dataclass(frozen=True)
class PrivacySpent:
    """What one call spent, under which notion, and how it was split.

    ``notion`` is ``"pure"`` (eps-DP), ``"approx"`` ((eps, delta)-DP) or
    ``"zcdp"`` (rho-zCDP, with the implied (eps, delta) in ``eps``/``delta``).
    ``split`` names each internal release with the part of the budget it used;
    for pure DP its eps add up to ``eps`` by basic composition. ``unit`` and
    ``neighbours`` say whom the guarantee protects (one row, or every row of
    one unit: dpstats/design/units.py). ``proven`` is
    False where the guarantee rests on a sampler whose law is not exactly its
    target's (an MCMC chain, or a continuous sampler in floating point:
    dpstats/privacy/noise.py's ``FLOAT_CAVEAT``); ``caveats`` then say what holds.
    """

    notion: str
    eps: float
    delta: float = 0.0
    rho: float | None = None
    split: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    neighbours: str = NEIGHBOURS
    caveats: tuple[str, ...] = field(default_factory=tuple)
    proven: bool = True
    unit: str = "row"
    """The privacy unit: ``"row"``, or the column whose every row of one value is one unit (``unit=``)."""

    def as_dict(self) -> dict:
        """Plain-Python view (for JSON and for R)."""
        return {
            "notion": self.notion,
            "eps": self.eps,
            "delta": self.delta,
            "rho": self.rho,
            "split": dict(self.split),
            "neighbours": self.neighbours,
            "unit": self.unit,
            "caveats": list(self.caveats),
            "proven": self.proven,
        }

    def guarantee(self) -> str:
        """Whether the guarantee is proven, in words (for the summary)."""
        if self.proven:
            return "proven (the mechanism's proof holds for the sampler as implemented)"
        return "NOT proven: it rests on a sampler whose law is not exact (see the caveats)"

    def describe(self) -> str:
        """One line such as ``eps = 1 (pure DP)``."""
        if self.notion == "pure":
            return f"eps = {self.eps:g} (pure DP)"
        if self.notion == "approx":
            return f"eps = {self.eps:g}, delta = {self.delta:g} (approximate DP)"
        return f"rho = {self.rho:g} (zCDP; implies eps = {self.eps:g}, delta = {self.delta:g})"


# --------------------------------------------------------------------------
# zCDP <-> (eps, delta) conversions (Bun & Steinke 2016; Alabi et al. 2022, Lemma 23)
# --------------------------------------------------------------------------

#: The delta at which a zCDP release reports its implied eps when the user gave none.
DEFAULT_REPORT_DELTA = 1e-6


def zcdp_to_approx_eps(rho: float, delta: float) -> float:
    """An eps such that rho-zCDP implies (eps, delta)-DP: the smaller of two valid bounds.

    * Bun & Steinke (2016), Proposition 1.3: ``eps = rho + 2 sqrt(rho log(1/delta))``,
      valid for every delta in (0, 1).
    * Bun & Steinke (2016), Lemma 3.6 (Alabi et al. 2022, Lemma 23):
      ``eps = rho + sqrt(4 rho log(sqrt(pi rho) / delta))``. Its proof: the privacy
      loss Z obeys Pr[Z > t] <= exp(-(t - rho)^2 / (4 rho)) for t >= rho (Markov on
      exp((a - 1) Z) with a = (t + rho) / (2 rho) > 1), and
      delta(eps) = int_eps^inf e^(eps - t) Pr[Z > t] dt
                <= int_eps^inf exp(-(t - rho)^2 / (4 rho)) dt <= sqrt(pi rho) exp(-(eps - rho)^2 / (4 rho))
      for eps >= rho (Gaussian tail Pr[N > x] <= exp(-x^2/2)/2, x >= 0). The
      printed formula needs ``sqrt(pi rho) >= delta`` (a non-negative logarithm);
      when ``sqrt(pi rho) < delta`` the same bound at eps = rho already gives
      delta' = sqrt(pi rho) < delta, so eps = rho is valid: the logarithm is
      replaced by max(0, log(.)). Lemma 3.6 is the tighter one when rho < 1/pi.

    Both are upper bounds on the exact privacy profile (for a composition of
    Gaussian mechanisms the exact curve is :func:`gaussian_delta`), so their
    minimum is a valid, slightly conservative conversion.
    """
    rho = check_eps(rho, "rho")
    delta = check_delta(delta)
    if delta == 0.0:
        raise ValueError("delta must be > 0 to convert zCDP to (eps, delta)-DP")
    prop_13 = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    log_term = max(0.0, 0.5 * math.log(math.pi * rho) - math.log(delta))
    lemma_36 = rho + math.sqrt(4.0 * rho * log_term)
    return min(prop_13, lemma_36)


def zcdp_reported(rho: float, delta: float) -> tuple[float, float]:
    """The (eps, delta) a rho-zCDP call reports: eps implied at the delta passed, or at
    :data:`DEFAULT_REPORT_DELTA` when none was (delta = 0)."""
    report_delta = delta if delta > 0 else DEFAULT_REPORT_DELTA
    return zcdp_to_approx_eps(rho, report_delta), report_delta


def approx_to_zcdp_rho(eps: float, delta: float, rel_tol: float = 1e-12) -> float:
    """The largest rho whose :func:`zcdp_to_approx_eps` at ``delta`` is at most ``eps``.

    The conversion is continuous and strictly increasing in rho (both bounds
    are), and is at least rho, so the answer lies in (0, eps]. Bisection on
    log(rho) keeps a bracket [lo, hi] with conversion(lo) <= eps < conversion(hi)
    and returns ``lo``: the guarantee (eps, delta) holds exactly, never up to a
    root-finder's tolerance.
    """
    eps = check_eps(eps)
    delta = check_delta(delta)
    if delta == 0.0:
        raise ValueError("delta must be > 0 to convert (eps, delta)-DP to zCDP")
    hi = eps
    if zcdp_to_approx_eps(hi, delta) <= eps:  # only if delta is so large that the bound is eps = rho
        return hi
    lo = eps * 1e-3
    while zcdp_to_approx_eps(lo, delta) > eps:
        lo *= 1e-3
    while hi - lo > rel_tol * lo:
        mid = math.sqrt(lo * hi)
        if zcdp_to_approx_eps(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
    return lo


def gaussian_delta(mu: float, eps: float) -> float:
    """Exact privacy profile delta(eps) of a Gaussian mechanism with sensitivity/sigma = mu.

    Balle & Wang (2018), Theorem 8: ``delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``.
    Adaptive composition of Gaussian mechanisms with ratios mu_t is again exactly
    this curve with mu = sqrt(sum mu_t^2) (Dong, Roth & Su 2019): rho-zCDP built from
    Gaussian steps (rho = sum mu_t^2 / 2) has the profile of mu = sqrt(2 rho).
    """
    from scipy.special import log_ndtr

    if mu <= 0:
        return 0.0
    a = log_ndtr(mu / 2.0 - eps / mu)
    b = eps + log_ndtr(-mu / 2.0 - eps / mu)
    return float(-math.expm1(b - a) * math.exp(a)) if b < a else 0.0
