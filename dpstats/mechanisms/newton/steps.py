"""The noisy Newton iteration on the scaled problem, and what one row moves in each release.

Each step ``t`` releases the score sum ``g = sum_i psi_c(y_i, x_i'theta) x_i`` and (where
dpstats/mechanisms/newton/mechanism.py asks) the curvature sum ``H = sum_i w(y_i, x_i'theta) x_i x_i'`` at the public
iterate ``theta`` (the previous step's output), with Laplace noise through
:func:`dpstats.privacy.noise.laplace_mechanism` (float-safe), and moves
``theta <- theta + H^{-1} g`` with ``H`` repaired to be positive definite (the earlier
steps use the Gram bound of every curvature sum, the last the curvature at its
iterate). ``psi_c`` is the link's score factor clipped to
``[-c, c]`` (Avella-Medina, Bradshaw & Loh 2023's bounded-influence scores): the
logit's ``y - F`` is within [-1, 1] already (``c = 1``, no clip); the probit's grows
with ``|eta|`` and is clipped at ``c = PROBIT_CLIP`` (the estimand moves only where a
fitted probability is beyond 0.9987 on the wrong side of its row's outcome).

Sensitivity under replace-one neighbours, every scaled entry in [-1, 1]: a row's
score term moves each coordinate by at most ``2c``; a one-hot block (at most one 1 per
row) moves by at most ``2c`` in all (the old row's column down, the new row's up):
``L1 = 2c (columns outside blocks + blocks)``. The curvature ``w`` is in
``[0, w_max]`` (``w_max`` = 1/4 for the logit, 1 for the probit), so each entry
``w x_j x_k`` of a row lies in ``[-w_max, w_max]``; on the upper triangle the L1
sensitivity is ``2 w_max p (p + 1) / 2``. Both bounds hold at every iterate, and
tests/test_newton.py checks them by brute force over the box's corners.

With survey weights (``Sample.weights``, each in its declared range ``[0, W]``) every
row's terms are multiplied by its weight, so each sensitivity is multiplied by ``W``;
the weighted sandwich's meat is released from the scores ``w_i psi_i z_i``, each bounded by
:func:`score_bound` (dpstats/uncertainty/design_meat.py; tests/test_weights.py, with a replay in
which a row's weight moves from 0 to ``W``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...glm.links import Link
from ...privacy import noise
from ...uncertainty.design_meat import ScoreBound

PROBIT_CLIP = 3.0
CURVATURE_MAX = {"logit": 0.25, "probit": 1.0}
MAX_STEP = 4.0
"""The longest step on the scaled problem (in the sup norm): a noisy early step cannot throw the iterate away."""


def score_clip(link: Link) -> float:
    """``c``: the bound on a row's score factor (module docstring)."""
    return 1.0 if link.name == "logit" else PROBIT_CLIP


def score_rows(link: Link, Z: np.ndarray, y: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Each row's clipped score term ``psi_c x``: ``(n, p)``."""
    c = score_clip(link)
    return np.clip(link.score_factor(y, Z @ theta), -c, c)[:, None] * Z


def curvature_rows(link: Link, Z: np.ndarray, y: np.ndarray, theta: np.ndarray | None) -> np.ndarray:
    """Each row's curvature weight, clipped to ``[0, w_max]`` (the probit's is below 1 already); with ``theta``
    None, ``w_max`` for every row: the Gram matrix times the bound, which majorises every curvature sum
    (Böhning & Lindsay 1988)."""
    if theta is None:
        return np.full(len(Z), CURVATURE_MAX[link.name])
    return np.clip(link.curvature(y, Z @ theta), 0.0, CURVATURE_MAX[link.name])


@dataclass(frozen=True)
class Sample:
    """The scaled rows, their responses and their survey weights (None: every row weighs 1), with the weights'
    declared upper end (1 without weights): what one row's terms are multiplied by at most."""

    Z: np.ndarray
    y: np.ndarray
    weights: np.ndarray | None = None
    weight_max: float = 1.0


def score_sensitivity(link: Link, p: int, blocks: tuple[tuple[int, ...], ...], weight_max: float = 1.0) -> float:
    """The (weighted) score sum's L1 sensitivity (module docstring)."""
    blocked = sum(len(b) for b in blocks)
    return 2.0 * weight_max * score_clip(link) * (p - blocked + len(blocks))


def curvature_sensitivity(link: Link, p: int, weight_max: float = 1.0) -> float:
    """The (weighted) curvature sum's L1 sensitivity on its upper triangle (module docstring)."""
    return 2.0 * weight_max * CURVATURE_MAX[link.name] * p * (p + 1) / 2


def score_bound(link: Link, p: int, blocks: tuple[tuple[int, ...], ...], weight_max: float = 1.0) -> ScoreBound:
    """Bounds on a row's clipped weighted score ``w psi_c z`` (dpstats/uncertainty/design_meat.py): at most one
    nonzero entry per one-hot block, every entry at most ``w_max c`` in absolute value."""
    groups = p - sum(len(b) for b in blocks) + len(blocks)
    largest = weight_max * score_clip(link)
    return ScoreBound(largest * groups, largest**2 * groups)


def noisy_score(link: Link, rows: Sample, theta, eps, blocks, rng) -> np.ndarray:
    """The released (weighted) score sum at ``theta``."""
    terms = score_rows(link, rows.Z, rows.y, theta)
    total = terms.sum(axis=0) if rows.weights is None else (rows.weights[:, None] * terms).sum(axis=0)
    sensitivity = score_sensitivity(link, rows.Z.shape[1], blocks, rows.weight_max)
    return np.asarray(noise.laplace_mechanism(rng, total, sensitivity, eps, "newton score"), dtype=float)


def _released_matrix(rng, weights_per_row: np.ndarray, Z: np.ndarray, sensitivity: float, eps: float, name: str):
    """``sum_i v_i z_i z_i'`` released on its upper triangle with Laplace noise, returned symmetric."""
    p = Z.shape[1]
    upper = np.triu_indices(p)
    total = np.einsum("i,ij,ik->jk", weights_per_row, Z, Z)[upper]
    released = noise.laplace_mechanism(rng, total, sensitivity, eps, name)
    H = np.zeros((p, p))
    H[upper] = released
    return H + np.triu(H, 1).T


def noisy_curvature(link: Link, rows: Sample, theta, eps, rng) -> np.ndarray:
    """The released (weighted) curvature sum at ``theta``, symmetric (its upper triangle is what is released)."""
    terms = curvature_rows(link, rows.Z, rows.y, theta)
    terms = terms if rows.weights is None else terms * rows.weights
    sensitivity = curvature_sensitivity(link, rows.Z.shape[1], rows.weight_max)
    return _released_matrix(rng, terms, rows.Z, sensitivity, eps, "newton curvature")


def noise_floor(link: Link, p: int, eps: float, weight_max: float = 1.0) -> float:
    """A bound, with room, on the spectral norm of the released curvature's noise: ``1.5 * 2 sigma sqrt(p)``
    (the semicircle's edge for a symmetric p x p matrix of independent entries of standard deviation
    ``sigma = sqrt 2 b``, b the Laplace scale). Raising the released matrix's eigenvalues to it keeps the noise
    from turning a weak direction of the curvature into a long step (public: p, eps and the sensitivity)."""
    b = curvature_sensitivity(link, p, weight_max) / eps
    return 1.5 * 2.0 * np.sqrt(2.0) * b * np.sqrt(p)


def repaired(H: np.ndarray, floor: float) -> np.ndarray:
    """``H`` with its eigenvalues raised to at least ``floor`` (post-processing)."""
    values, vectors = np.linalg.eigh(0.5 * (H + H.T))
    return (vectors * np.maximum(values, floor)) @ vectors.T


def newton_step(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``H^{-1} g``, shortened to ``MAX_STEP`` in the sup norm."""
    step = np.linalg.solve(H, g)
    longest = float(np.max(np.abs(step)))
    return step if longest <= MAX_STEP else step * (MAX_STEP / longest)
