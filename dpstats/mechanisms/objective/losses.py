"""The per-row losses of the linear index that objective perturbation minimises, normalised to be 1-Lipschitz.

Chaudhuri, Monteleoni & Sarwate (2011), Theorem 9 (the privacy of Algorithm 2)
asks of the loss of one row, as a function of its index ``eta = x'f``: convex,
twice continuously differentiable, ``|l'| <= 1`` and ``|l''| <= c``; Kifer,
Smith & Thakurta (2012), section 4, state it for any convex loss of one row whose
Hessian has rank at most one, which the loss of a linear index has. Each loss
here is minus the row's (quasi-)log-likelihood (dpstats/glm/links.py, ``y`` in
[0, 1]) divided by its Lipschitz constant ``L``, so that ``|l'| <= 1``; ``c``
is then ``sup l'' / L``.

* Logit: ``l' = F(eta) - y`` lies in [-1, 1] and ``l'' = F (1 - F) <= 1/4``
  for every y: L = 1, c = 1/4 (the paper's section 3.4.1).
* Probit: ``l'`` grows like ``|eta|`` (the inverse Mills ratio), so no L holds
  on the whole line. Beyond a public index bound R the loss is continued by its
  tangent plus a smoothing term, ``l(eta) = l0(R) + l0'(R) t + l0''(R) s^2 log
  cosh(t / s)`` with ``t = eta - R`` (likewise below -R) and ``s = TAIL_WIDTH``:
  convex, twice continuously differentiable (``l'' = l0''(R) sech^2(t / s)``)
  and Lipschitz, equal to the probit loss wherever ``|eta| <= R``. On [-R, R],
  ``|l0'|`` is largest at the ends, ``lambda(R) = phi(R) / Phi(-R)`` (the row
  with y = 0 at R, or y = 1 at -R; a fractional y mixes the two), and beyond
  them it grows by at most ``s l0''(R)``; the curvature of the y = 0 row grows
  with eta towards 1, so on the whole line ``l0'' <= kappa(R) = lambda(R)
  (lambda(R) - R)``. Hence ``L = lambda(R) + s kappa(R)`` and ``c = kappa(R) / L``.
  The estimand is the probit MLE whenever every row's fitted index lies in
  [-R, R] (the two losses agree near that fit, and both are convex); a release
  whose index can leave it somewhere on the declared box is flagged (the
  mechanism's ``bias``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...glm.links import Link

TAIL_WIDTH = 0.25
"""``s``, the width over which the probit's tail extension flattens its curvature."""


def _log_cosh(u: np.ndarray) -> np.ndarray:
    a = np.abs(u)
    return a + np.log1p(np.exp(-2.0 * a)) - math.log(2.0)


def mills(r: float) -> float:
    """``phi(r) / Phi(-r)``: the probit loss's slope at ``eta = r`` for a row with y = 0."""
    return math.exp(-0.5 * r * r - 0.5 * math.log(2.0 * math.pi) - float(special.log_ndtr(-r)))


@dataclass(frozen=True)
class IndexLoss:
    """The normalised loss ``l(eta; y) / L`` of one row (module docstring)."""

    link: Link
    lipschitz: float
    """``L``: the raw loss's ``sup |l'|`` (1 for the logit)."""
    curvature_max: float
    """``sup l''`` of the raw loss (1/4 for the logit, ``kappa(R)`` for the probit)."""
    index_bound: float | None
    """R, beyond which the probit's loss is continued (None for the logit, used as is)."""

    @classmethod
    def of(cls, link: Link, index_bound: float) -> IndexLoss:
        """The logit's loss, or the probit's continued beyond ``|eta| = index_bound``."""
        if link.name == "logit":
            return cls(link, 1.0, 0.25, None)
        slope = mills(index_bound)
        kappa = slope * (slope - index_bound)
        return cls(link, slope + TAIL_WIDTH * kappa, kappa, float(index_bound))

    @property
    def smoothness(self) -> float:
        """``c``: the normalised loss's ``sup l''`` (Algorithm 2's c)."""
        return self.curvature_max / self.lipschitz

    def evaluate(self, y: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(l, l', l'')`` of the normalised loss at each row's index."""
        bound = math.inf if self.index_bound is None else self.index_bound
        inner = np.clip(eta, -bound, bound)
        link = self.link
        value, slope, curve = -link.loglik(y, inner), -link.score_factor(y, inner), link.curvature(y, inner)
        if self.index_bound is not None:
            t = (eta - inner) / TAIL_WIDTH
            value = value + TAIL_WIDTH * (slope * t + curve * TAIL_WIDTH * _log_cosh(t))
            slope = slope + curve * TAIL_WIDTH * np.tanh(t)
            curve = curve / np.square(np.cosh(np.minimum(np.abs(t), 350.0)))
        return value / self.lipschitz, slope / self.lipschitz, curve / self.lipschitz
