"""NoisyStats for designs with categorical terms: sums by level, centred, with structural zeros.

With an intercept and one-hot blocks (a categorical term's treatment dummies:
every row has at most one 1 among them; dpstats/frontend/formula.py, ``one_hot_blocks``),
the centred S_xx of the multivariate generalisation would spend its budget on
p(p + 1)/2 entries, each of sensitivity 1 - 1/n: the noise grows with the
square of the number of levels, and with 20 levels the noisy S_xx is not
positive definite at n = 5,000 and eps = 2 in most runs. This module releases
instead, on the unit scale (columns and response in [0, 1]; dummies stay 0/1),
the entries of the upper triangle of ``Z'Z`` with ``Z = [d_0, u - c, v - c_v]``:

* one block, the one with the most levels (the *full* block), is coded in
  full: the intercept column is replaced by ``d_0``, the indicator of its
  reference level, so every row is at exactly one of its levels, and each
  level's count and sums are released as they are (the reference level's
  too, instead of the totals, from which it would be the difference of all
  the levels' noisy sums);
* every continuous column and the response are centred at the middle of their
  declared bounds (c = 1/2, public; the dummies are not shifted);

leaving out

* ``(v, v)``, which the fit does not need;
* the pairs of two different columns of one block, which are 0 for every row
  (structural zeros: no row is at two levels of one term).

Each dummy's square is itself, so the diagonal of ``W'W`` (``W = [d_0, u - c]``)
holds the levels' counts. The release is one Laplace vector at the point's
budget; the fit solves ``W'W theta = W'(v - c_v)`` and maps theta to the
intercept and treatment effects on the unit scale (:meth:`Layout.to_unit`).
n is public but not used: the counts are released.

Why centre. The within-level slope subtracts, for every level k, the level's
sums ``sum_k (u - c) sum_k (v - c_v) / n_k``; each carries its own noise,
multiplied by the level's mean of the other column. Uncentred those means are
about 1/2 and the L noises add up (the error grows like sqrt L); centred they
are the distance of the level's mean from the middle of the bounds, small when
the data fill the bounds, and never more than 1/2 (against up to 1).

Sensitivity (replace-one; :func:`structured_sensitivity`). Two rows a, b
differ in the released entries by at most the sum, over groups of entries, of
the largest change within each group (the triangle inequality). Centred
continuous coordinates lie in [-1/2, 1/2]; with c continuous slope columns
and B blocks:

* each continuous slope column's square (j, j) lies in [0, 1/4]: ``c / 4``;
* each product (j, k) of two of the c + 1 continuous columns and the response
  lies in [-1/4, 1/4], so it moves by at most 1/2: ``C(c + 1, 2) / 2``;
* each block's entries (d, d) and (d, j) for the continuous columns and the
  response: a row has one dummy d at 1 (or none), and those entries' absolute
  values sum to at most ``1 + (c + 1) / 2`` for it, so two rows move them by
  at most ``c + 3``;
* each pair of blocks, entries (d, d'): a row has at most one of them at 1,
  so they move by at most 2: ``2 C(B, 2)``.

It does not grow with the number of levels: one factor and one regressor give
4.75 whatever the levels, against 8 for the uncentred release with an
intercept column that this module released before, and
3 p(p + 1)/2 + 3p spread over the centred releases of the multivariate
NoisyStats. It is a bound, not attained: the largest move found on a grid of
rows is 4.5 for that design (tests/test_noisystats_structured.py checks the
bound against every pair of rows on a grid, design by design). Measured by
benchmarks/bench_auto.py's categorical cells (y ~ x + C(g), n = 5,000,
eps = 2, all of eps on the point): the 68th percentile of the slope's distance
from OLS fell from 0.032 (uncentred, with the intercept column) to 0.021
(centred) and 0.013 (coded in full) with 20 levels; with 2 levels, where the
multivariate release ran before, from 0.021 to 0.013.

Failure (the paper's output ⊥) is a noisy ``W'W`` that is not positive definite.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...privacy import noise
from . import repair
from .outputs import is_positive_definite

NAME = "W'W, W'y"
"""The name of the point's release (in the budget split)."""
CENTRE = 0.5
"""Where the continuous columns and the response are centred on the unit scale: their bounds' midpoint."""


@dataclass(frozen=True)
class Layout:
    """Which entries of the upper triangle of ``Z'Z`` are released (module docstring).

    ``Z = [d_0, u - c, v - c_v]`` for p slope columns u: ``d_0`` indicates the
    reference level of the block ``full`` (positions among the slopes), coded
    in full in place of the intercept; ``centre`` holds the centres c of the
    slope columns then c_v of the response: :data:`CENTRE` for the continuous
    ones, 0 for the dummies.
    """

    p: int
    rows: np.ndarray
    cols: np.ndarray
    centre: np.ndarray
    full: np.ndarray

    @classmethod
    def of(cls, p: int, blocks: tuple[tuple[int, ...], ...]) -> Layout:
        """The released entries for ``p`` slope columns with ``blocks`` (positions among the slopes)."""
        full = max(blocks, key=len)  # the first of the largest: most levels get their own intercept
        size = p + 2
        block_of = {1 + j: b for b, block in enumerate(blocks) for j in block} | {0: blocks.index(full)}
        rows, cols = np.triu_indices(size)
        keep = []
        for j, k in zip(rows, cols, strict=True):
            structural = j != k and j in block_of and block_of[j] == block_of.get(k)  # no row has both
            keep.append(not (structural or j == k == size - 1))
        mask = np.array(keep)
        centre = np.full(p + 1, CENTRE)
        centre[[j - 1 for j in block_of if j > 0]] = 0.0
        return cls(p, rows[mask], cols[mask], centre, np.array(full, dtype=np.intp))

    def values(self, U: np.ndarray, v: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """The released entries' exact values for unit-scale rows ``(U, v)``: of ``Z'Z``, or of ``Z' diag(w) Z``
        for survey ``weights`` (dpstats/mechanisms/noisystats/weighted.py)."""
        Z = self.rows_of(U, v)
        return ((Z.T if weights is None else Z.T * weights) @ Z)[self.rows, self.cols]

    def rows_of(self, U: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The rows ``Z = [d_0, u - c, v - c_v]`` of unit-scale rows ``(U, v)``."""
        reference = 1.0 - U[:, self.full].sum(axis=1)
        return np.column_stack([reference, U - self.centre[:-1], v - self.centre[-1]])

    def matrices(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``W'W`` (with its structural zeros) and ``W'v`` from released ``values``."""
        size = self.p + 2
        full = np.zeros((size, size))
        full[self.rows, self.cols] = values
        full[self.cols, self.rows] = values
        return full[:-1, :-1], full[:-1, -1]

    def to_unit(self) -> tuple[np.ndarray, np.ndarray]:
        """``(T, t)`` with ``(a, b) = T theta + t``: the released parametrisation to the unit scale's.

        ``v - c_v = g_0 d_0 + sum_k g_k d_k + ...`` over the full block's
        levels is, in treatment coding, the centred intercept ``a_c = g_0``
        and the effects ``g_k - g_0``; then ``v - c_v = a_c + b'(u - c)`` is
        ``v = (a_c + c_v - b'c) + b'u``.
        """
        size = self.p + 1
        treatment = np.eye(size)
        treatment[1 + self.full, 0] = -1.0
        uncentring = np.eye(size)
        uncentring[0, 1:] = -self.centre[:-1]
        shift = np.zeros(size)
        shift[0] = self.centre[-1]
        return uncentring @ treatment, shift

    def totals(self, released: np.ndarray) -> np.ndarray:
        """Sums over all rows from a released ``W'W`` or ``W'v``: its full block's levels' rows added up.

        Every row is at exactly one level of the full block, so ``W'W``'s gives
        ``sum_i w_i`` (the reference level's count, then ``sum (u - c)``) and
        ``W'v``'s ``sum (v - c_v)``.
        """
        return released[np.r_[0, 1 + self.full]].sum(axis=0)

    def gram_pattern(self) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """The released entries of ``W'W`` (size, rows, cols): its noise's pattern."""
        inside = self.cols < self.p + 1
        rows, cols = self.rows[inside], self.cols[inside]
        return self.p + 1, tuple(map(int, rows)), tuple(map(int, cols))

    def noise_map(self, theta: np.ndarray) -> np.ndarray:
        """G with ``E theta = G e`` for the noise e of the released ``W'W`` entries (E symmetric)."""
        inside = np.flatnonzero(self.cols < self.p + 1)
        rows, cols = self.rows[inside], self.cols[inside]
        G = np.zeros((self.p + 1, inside.size))
        entry = np.arange(inside.size)
        np.add.at(G, (rows, entry), theta[cols])
        off = rows != cols
        np.add.at(G, (cols[off], entry[off]), theta[rows[off]])
        return G


@functools.lru_cache(maxsize=256)
def structured_sensitivity(continuous: int, block_sizes: tuple[int, ...]) -> float:
    """A bound on the L1 sensitivity of the released entries (module docstring), from public counts.

    ``continuous`` slope columns outside the blocks, and the blocks' numbers of
    columns: ``c / 4 + C(c + 1, 2) / 2 + B (c + 3) + 2 C(B, 2)`` for c
    continuous columns and B blocks (the module docstring's groups, in order).
    """
    c, blocks = continuous, len(block_sizes)
    return c / 4 + 0.5 * math.comb(c + 1, 2) + blocks * (c + 3) + 2 * math.comb(blocks, 2)


def release(
    rng: np.random.Generator,
    rows: Callable[[Callable[[np.ndarray, np.ndarray], np.ndarray]], np.ndarray],
    n: int,
    p: int,
    blocks: tuple[tuple[int, ...], ...],
    eps: float,
    reach: int = 1,
) -> tuple[np.ndarray, np.ndarray, Layout, float]:
    """One Laplace release of the layout's entries at budget eps: ``(W'W, W'v, layout, Laplace scale)``.

    ``rows`` sums :meth:`Layout.values` over the n rows ``(U, v)`` (p slope columns) on the unit scale;
    ``reach`` rows may change between neighbours (a privacy unit of up to that many rows: the sums move
    by at most ``reach`` times one row's sensitivity, by the triangle inequality).
    """
    layout = Layout.of(p, blocks)
    in_block = sum(len(b) for b in blocks)
    sensitivity = reach * structured_sensitivity(p - in_block, tuple(len(b) for b in blocks))
    noisy = np.atleast_1d(noise.laplace_mechanism(rng, rows(layout.values), sensitivity, eps, NAME))
    wtw, wtv = layout.matrices(noisy)
    return wtw, wtv, layout, sensitivity / eps


def privacy_covariance(coef: np.ndarray, wtw: np.ndarray, layout: Layout, scale: float) -> np.ndarray:
    """Delta-method covariance of the noise in the unit scale's ``coef`` (intercept, slopes).

    The centred fit is ``theta~ = (W'W + E)^{-1} (W'v + e)`` and
    ``theta~ - theta^ ~ A^{-1} (e - E theta)``: e iid Laplace(scale) in every
    entry of ``W'v``, and ``E theta = G e'`` with e' the iid Laplace(scale)
    noise of the released ``W'W`` entries (:meth:`Layout.noise_map`), so
    ``Var = A^{-1} 2 scale^2 (I + G G') A^{-1}``, mapped to the unit scale by
    :meth:`Layout.uncentring`.
    """
    T, t = layout.to_unit()
    G = layout.noise_map(np.linalg.solve(T, coef - t))
    middle = 2.0 * scale**2 * (np.eye(coef.size) + G @ G.T)
    inverse = T @ np.linalg.inv(wtw)
    return inverse @ middle @ inverse.T


def floor(layout: Layout, scale: float) -> float:
    """The repair's floor for the released ``W'W`` at Laplace ``scale`` (dpstats/mechanisms/noisystats/repair.py)."""
    return scale * repair.norm_quantile(*layout.gram_pattern())


def repaired_gram(
    wtw: np.ndarray, layout: Layout, scale: float, repairs: bool
) -> tuple[np.ndarray | None, float | None, str | None]:
    """The released ``W'W`` to solve with, the repair's floor and the bias it names (None, None, None without
    ``repairs``: the matrix as released, or None where it is not positive definite, the paper's failure)."""
    if not repairs:
        return (wtw if is_positive_definite(wtw) else None), None, None
    threshold = floor(layout, scale)
    return repair.repaired(wtw, threshold), threshold, repair.floor_bias(wtw, threshold)


def noisy_refits(
    rng: np.random.Generator,
    wtw: np.ndarray,
    targets: np.ndarray,
    layout: Layout,
    scale: float,
    floor: float | None = None,
) -> np.ndarray:
    """Refits ``(A + E*)^{-1} (A theta* + e*)`` for each row theta* of ``targets``, noise as released.

    ``targets`` and the refits are on the unit scale (intercept, slopes), the
    solves on the released centred ``A = W'W``. NaN where ``A + E*`` is not
    positive definite (the mechanism's failure), or, given the repair's
    ``floor``, ``A + E*`` repaired as the release was.
    """
    size, p = targets.shape
    T, t = layout.to_unit()
    released = np.linalg.solve(T, (targets - t).T).T
    S = wtw + repair.noise_matrices(rng, scale, *layout.gram_pattern(), size)
    rhs = released @ wtw + noise.laplace(rng, scale, (size, p))
    return repair.solve_refits(S, rhs, floor) @ T.T + t
