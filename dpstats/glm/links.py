"""The logit and probit links of a binary-response model, with the bounds their proofs use.

A row with regressors ``x`` and response ``y`` in [0, 1] (0/1, or a fractional
response: Papke & Wooldridge's quasi-likelihood) has the linear index
``eta = x'theta``, the mean ``mu = F(eta)`` and the (quasi-)log-likelihood
``y log F(eta) + (1 - y) log(1 - F(eta))``. ``F`` is the logistic cdf (logit)
or the standard normal cdf (probit). Each link carries the suprema of its
density ``f = F'`` and of ``|f'|`` over the real line, which bound what one
row moves the statistics of dpstats/glm/at_fit.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

LINKS = ("logit", "probit")


@dataclass(frozen=True)
class Link:
    """One link ``F``: its mean, density, the density's slope and the per-row log-likelihood."""

    name: str
    density_max: float
    """``sup f``: 1/4 for the logistic, ``phi(0) = 1/sqrt(2 pi)`` for the normal."""
    slope_max: float
    """``sup |f'|``: ``1 / (6 sqrt 3)`` for the logistic (at ``mu = (3 -+ sqrt 3) / 6``), ``phi(1)`` for the normal."""

    def mean(self, eta: np.ndarray) -> np.ndarray:
        """``F(eta)``."""
        return special.expit(eta) if self.name == "logit" else special.ndtr(eta)

    def density(self, eta: np.ndarray) -> np.ndarray:
        """``f(eta) = F'(eta)``."""
        if self.name == "logit":
            mu = special.expit(eta)
            return mu * (1.0 - mu)
        return np.exp(-0.5 * np.square(eta)) / math.sqrt(2.0 * math.pi)

    def density_slope(self, eta: np.ndarray) -> np.ndarray:
        """``f'(eta)``: ``f (1 - 2F)`` for the logistic, ``-eta f`` for the normal."""
        if self.name == "logit":
            mu = special.expit(eta)
            return mu * (1.0 - mu) * (1.0 - 2.0 * mu)
        return -eta * self.density(eta)

    def loglik(self, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """Per-row ``y log F + (1 - y) log(1 - F)``, computed without cancellation for large ``|eta|``."""
        if self.name == "logit":
            return y * eta - np.logaddexp(0.0, eta)
        return y * special.log_ndtr(eta) + (1.0 - y) * special.log_ndtr(-eta)

    def score_factor(self, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """``d loglik / d eta``: ``y - F`` for the logistic; ``y phi/Phi - (1 - y) phi/(1 - Phi)`` for the normal
        (inverse Mills ratios, in logs for large ``|eta|``)."""
        if self.name == "logit":
            return y - special.expit(eta)
        log_phi = -0.5 * np.square(eta) - 0.5 * math.log(2.0 * math.pi)
        return y * np.exp(log_phi - special.log_ndtr(eta)) - (1.0 - y) * np.exp(log_phi - special.log_ndtr(-eta))

    def curvature(self, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """``-d^2 loglik / d eta^2`` (>= 0: both log-likelihoods are concave in eta). For the logistic it is
        ``F (1 - F)`` whatever y; for the normal, ``lambda (lambda + eta)`` with the Mills ratio of each side."""
        if self.name == "logit":
            return self.density(eta)
        log_phi = -0.5 * np.square(eta) - 0.5 * math.log(2.0 * math.pi)
        up = np.exp(log_phi - special.log_ndtr(eta))  # phi / Phi
        down = np.exp(log_phi - special.log_ndtr(-eta))  # phi / (1 - Phi)
        return y * up * (up + eta) + (1.0 - y) * down * (down - eta)

    def information_weight(self, eta: np.ndarray) -> np.ndarray:
        """The expected curvature ``f^2 / (F (1 - F))`` (Fisher's weight): ``F (1 - F)`` for the logistic."""
        if self.name == "logit":
            return self.density(eta)
        mu = np.clip(self.mean(eta), 1e-300, 1.0)
        tail = np.clip(self.mean(-eta), 1e-300, 1.0)
        return np.square(self.density(eta)) / (mu * tail)


LOGIT = Link("logit", density_max=0.25, slope_max=1.0 / (6.0 * math.sqrt(3.0)))
PROBIT = Link("probit", density_max=1.0 / math.sqrt(2.0 * math.pi), slope_max=math.exp(-0.5) / math.sqrt(2.0 * math.pi))


def get_link(name: object) -> Link:
    """The link called ``name`` ("logit" or "probit"); public arguments only."""
    if name == "logit":
        return LOGIT
    if name == "probit":
        return PROBIT
    raise ValueError(f"link must be one of {LINKS}, not {name!r}")
