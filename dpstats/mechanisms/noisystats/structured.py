"""NoisyStats for designs with categorical terms: centred sufficient statistics with structural zeros.

With an intercept and one-hot blocks (a categorical term's treatment dummies:
every row has at most one 1 among them; dpstats/formula.py, ``one_hot_blocks``),
the centred S_xx of the multivariate generalisation would spend its budget on
p(p + 1)/2 entries, each of sensitivity 1 - 1/n: the noise grows with the
square of the number of levels, and with 20 levels the noisy S_xx is not
positive definite at n = 5,000 and eps = 2 in most runs. This module releases
instead, on the unit scale (columns and response in [0, 1]; dummies stay 0/1),
the entries of the upper triangle of ``Z'Z`` with ``Z = [1, u - c, v - c_v]``,
every continuous column and the response centred at the middle of its declared
bounds (c = 1/2: a public shift; the dummies are not shifted), except

* ``(1, 1) = n``, which is public;
* ``(v, v)``, which the fit does not need;
* the pairs of two different columns of one block, which are 0 for every row
  (structural zeros: no row has two dummies of one term);
* the diagonal entry of a dummy, which equals its (1, k) entry, the level's
  count (a dummy's square is itself): it is filled in from that one release,
  so the counts are released once and the matrix stays consistent (two
  independent noises on one count pull the solve apart as the levels grow);

in one Laplace release at the point's budget. They are ``W'W`` (with
``W = [1, u - c]``; its first row holds the sums ``sum (u - c)`` and the counts
of the levels) and ``W'(v - c_v)``; the fit solves the normal equations and
shifts the intercept back (:meth:`Layout.uncentring`; with an intercept the
slopes do not depend on the shift).

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

* each continuous slope column j, entries (1, j) and (j, j): the change
  ``|a - b| (1 + |a + b|)`` is at most 1 (its largest value on the square
  is at a = 1/2, b = -1/2, where a + b = 0), and the response's (1, v) at most 1:
  ``c + 1`` in all;
* each product (j, k) of two of the c + 1 continuous columns and the response:
  a product lies in [-1/4, 1/4], so it moves by at most 1/2:
  ``C(c + 1, 2) / 2``;
* each block's entries (1, d) and (d, j) for the continuous columns and the
  response: a row has one dummy d at 1 (or none), and those entries' absolute
  values sum to at most ``1 + (c + 1) / 2`` for it, so two rows move them by
  at most ``c + 3``;
* each pair of blocks, entries (d, d'): a row has at most one of them at 1,
  so they move by at most 2: ``2 C(B, 2)``.

It does not grow with the number of levels: one factor and one regressor give
6.5 whatever the levels (against 8 for the uncentred release, whose corner
maximum it replaces), against 3 p(p + 1)/2 + 3p spread over the centred
releases of the multivariate NoisyStats. It is a bound, not attained: the
largest move found on a grid of rows is 6 for that design
(tests/test_noisystats_structured.py checks the bound against every pair of
rows on a grid, design by design).

Failure (the paper's output ⊥) is a noisy ``W'W`` that is not positive definite.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ... import noise
from . import repair

NAME = "W'W, W'y"
"""The name of the point's release (in the budget split)."""
CENTRE = 0.5
"""Where the continuous columns and the response are centred on the unit scale: their bounds' midpoint."""


@dataclass(frozen=True)
class Layout:
    """Which entries of the upper triangle of ``Z'Z`` (Z = [1, u - c, v - c_v], p slope columns) are released.

    ``tied`` holds the dummies' columns of ``W'W``, whose diagonal is their (1, k)
    entry; ``centre`` the centres c of the p slope columns then c_v of the
    response: :data:`CENTRE` for the continuous ones, 0 for the dummies.
    """

    p: int
    rows: np.ndarray
    cols: np.ndarray
    tied: np.ndarray
    centre: np.ndarray

    @classmethod
    def of(cls, p: int, blocks: tuple[tuple[int, ...], ...]) -> Layout:
        """The released entries for ``p`` slope columns with ``blocks`` (positions among the slopes)."""
        size = p + 2
        block_of = {1 + j: b for b, block in enumerate(blocks) for j in block}
        rows, cols = np.triu_indices(size)
        keep = []
        for j, k in zip(rows, cols, strict=True):
            structural = j in block_of and block_of[j] == block_of.get(k)  # a zero, or a dummy's diagonal
            keep.append(not ((j == 0 and k == 0) or (j == k == size - 1) or structural))
        mask = np.array(keep)
        centre = np.full(p + 1, CENTRE)
        centre[[j - 1 for j in block_of]] = 0.0
        return cls(p, rows[mask], cols[mask], np.array(sorted(block_of), dtype=np.intp), centre)

    def values(self, U: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The released entries' exact values for unit-scale rows ``(U, v)``."""
        Z = np.column_stack([np.ones(U.shape[0]), U - self.centre[:-1], v - self.centre[-1]])
        return (Z.T @ Z)[self.rows, self.cols]

    def matrices(self, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``W'W`` (with n in its corner, structural zeros) and ``W'v`` from released ``values``."""
        size = self.p + 2
        full = np.zeros((size, size))
        full[self.rows, self.cols] = values
        full[self.cols, self.rows] = values
        full[0, 0] = n
        full[self.tied, self.tied] = full[0, self.tied]
        return full[:-1, :-1], full[:-1, -1]

    def uncentring(self) -> tuple[np.ndarray, np.ndarray]:
        """``(T, t)`` with ``(a, b) = T (a_c, b) + t``: the centred fit's intercept to the unit scale's.

        ``v - c_v = a_c + b'(u - c)`` is ``v = (a_c + c_v - b'c) + b'u``.
        """
        T = np.eye(self.p + 1)
        T[0, 1:] = -self.centre[:-1]
        t = np.zeros(self.p + 1)
        t[0] = self.centre[-1]
        return T, t

    def unit_sums(self, wtw: np.ndarray, n: int) -> np.ndarray:
        """The unit scale's column sums ``sum u`` from the released ``W'W``'s first row (``sum (u - c)``)."""
        return wtw[0, 1:] + n * self.centre[:-1]

    def gram_pattern(self) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """The released entries of ``W'W`` (size, rows, cols, tied diagonals): its noise's pattern."""
        inside = self.cols < self.p + 1
        rows, cols = self.rows[inside], self.cols[inside]
        return self.p + 1, tuple(map(int, rows)), tuple(map(int, cols)), tuple(map(int, self.tied))

    def noise_map(self, coef: np.ndarray) -> np.ndarray:
        """G with ``E theta = G e`` for the noise e of the released ``W'W`` entries (E symmetric, tied diagonals)."""
        inside = np.flatnonzero(self.cols < self.p + 1)
        rows, cols = self.rows[inside], self.cols[inside]
        G = np.zeros((self.p + 1, inside.size))
        entry = np.arange(inside.size)
        np.add.at(G, (rows, entry), coef[cols])
        off = rows != cols
        np.add.at(G, (cols[off], entry[off]), coef[rows[off]])
        first = {int(k): r for r, k in zip(entry, cols, strict=True) if rows[r] == 0}
        for j in self.tied:
            G[j, first[int(j)]] += coef[j]
        return G


@functools.lru_cache(maxsize=256)
def structured_sensitivity(continuous: int, block_sizes: tuple[int, ...]) -> float:
    """A bound on the L1 sensitivity of the released entries (module docstring), from public counts.

    ``continuous`` slope columns outside the blocks, and the blocks' numbers of
    columns: ``(c + 1) + C(c + 1, 2) / 2 + B (c + 3) + 2 C(B, 2)`` for c
    continuous columns and B blocks (the module docstring's groups, in order).
    """
    c, blocks = continuous, len(block_sizes)
    return (c + 1) + 0.5 * math.comb(c + 1, 2) + blocks * (c + 3) + 2 * math.comb(blocks, 2)


def release(
    rng: np.random.Generator,
    rows: Callable[[Callable[[np.ndarray, np.ndarray], np.ndarray]], np.ndarray],
    n: int,
    p: int,
    blocks: tuple[tuple[int, ...], ...],
    eps: float,
) -> tuple[np.ndarray, np.ndarray, Layout, float]:
    """One Laplace release of the layout's entries at budget eps: ``(W'W, W'v, layout, Laplace scale)``.

    ``rows`` sums :meth:`Layout.values` over the n rows ``(U, v)`` (p slope columns) on the unit scale.
    """
    layout = Layout.of(p, blocks)
    in_block = sum(len(b) for b in blocks)
    sensitivity = structured_sensitivity(p - in_block, tuple(len(b) for b in blocks))
    noisy = np.atleast_1d(noise.laplace_mechanism(rng, rows(layout.values), sensitivity, eps, NAME))
    wtw, wtv = layout.matrices(noisy, n)
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
    T, t = layout.uncentring()
    centred = np.linalg.solve(T, coef - t)
    G = layout.noise_map(centred)
    middle = 2.0 * scale**2 * (np.eye(coef.size) + G @ G.T)
    inverse = T @ np.linalg.inv(wtw)
    return inverse @ middle @ inverse.T


def floor(layout: Layout, scale: float) -> float:
    """The repair's floor for the released ``W'W`` at Laplace ``scale`` (dpstats/mechanisms/noisystats/repair.py)."""
    return scale * repair.norm_quantile(*layout.gram_pattern())


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
    T, t = layout.uncentring()
    centred = np.linalg.solve(T, (targets - t).T).T
    S = wtw + repair.noise_matrices(rng, scale, *layout.gram_pattern(), size)
    rhs = centred @ wtw + noise.laplace(rng, scale, (size, p))
    return repair.solve_refits(S, rhs, floor) @ T.T + t
