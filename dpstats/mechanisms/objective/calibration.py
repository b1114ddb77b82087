"""The privacy calibration of objective perturbation: Chaudhuri, Monteleoni & Sarwate (2011), Algorithm 2.

Inputs: the budget eps of the release, n (public), the smoothness c of the
normalised loss (dpstats/mechanisms/objective/losses.py: ``|l'| <= 1``,
``l'' <= c``) and the user's regulariser Lambda (``regularization``, >= 0).
Algorithm 2 sets

    eps' = eps - log(1 + 2c / (n Lambda) + c^2 / (n^2 Lambda^2));
    if eps' > 0: Delta = 0;  else: Delta = c / (n (e^{eps/4} - 1)) - Lambda, eps' = eps / 2;

draws b with density ``nu(b) ~ exp(-beta ||b||)``, ``beta = eps' / 2`` (so ``||b|| ~ Gamma(p, 1/beta)``
with a uniform direction, section 3.3), and minimises

    J(f) = (1/n) sum_i l(x_i'f; y_i) + ((Lambda + Delta) / 2) ||f||^2 + b'f / n.

Without a regulariser (Lambda = 0, the default: the estimand is the MLE, as
Kifer, Smith & Thakurta 2012, section 4, allow, Delta doing the regulariser's
work) the first branch never holds: ``Delta = c / (n (e^{eps/4} - 1))`` and
``beta = eps / 4``. Why it is eps-DP for replace-one neighbours (the paper's
neighbours), in short (Theorem 9's proof): J is strongly convex, so b and the
minimiser f determine each other, ``b(f; D) = -(sum_i l'(x_i'f) x_i + n (Lambda + Delta) f)``
(the first-order condition). A neighbour D' with row n replaced gives
``b(f; D) - b(f; D') = l'(x_n'f) x_n - l'(x_n''f) x_n'``, of norm at most 2 (``||x|| <= 1``,
``|l'| <= 1``), so the densities of b differ by at most ``e^{2 beta} = e^{eps'}``;
the Jacobian of ``f -> b`` differs by a rank-two term whose determinant ratio is
at most ``(1 + c / (n (Lambda + Delta)))^2``, which is ``e^{eps - eps'}`` in
either branch. Their product is ``e^eps``. As eps grows, Delta vanishes
(``n Delta ~ c e^{-eps/4}``) and so does b: the fit tends to the MLE. Past
eps ~ 2,800 the ridge underflows to 0 in floating point; a guarantee that weak
protects nothing anyway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    """Algorithm 2's ``Delta``, the total ridge ``Lambda + Delta`` (per row, as in J) and ``beta``."""

    delta: float
    ridge: float
    beta: float

    @property
    def noise_scale(self) -> float:
        """``1 / beta``: the scale of the Gamma(p, 1/beta) norm of b."""
        return 1.0 / self.beta


SENSITIVITY = 2.0
"""``sup ||b(f; D) - b(f; D')||`` over replace-one neighbours and every f (module docstring)."""


def calibrate(eps: float, n: int, c: float, regularization: float = 0.0) -> Calibration:
    """Algorithm 2's constants for a release at ``eps`` on n rows (module docstring)."""
    lam = float(regularization)
    eps_prime = -math.inf if lam == 0.0 else eps - 2.0 * math.log1p(c / (n * lam))
    delta = 0.0
    if eps_prime <= 0.0:
        growth = math.expm1(eps / 4.0) if eps < 2800.0 else math.inf
        delta = max(c / (n * growth) - lam, 0.0)
        eps_prime = eps / 2.0
    return Calibration(delta=delta, ridge=lam + delta, beta=eps_prime / 2.0)
