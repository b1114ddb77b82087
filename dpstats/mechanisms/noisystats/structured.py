"""NoisyStats for designs with categorical terms: uncentred sufficient statistics with structural zeros.

With an intercept and one-hot blocks (a categorical term's treatment dummies:
every row has at most one 1 among them; dpstats/formula.py, ``one_hot_blocks``),
the centred S_xx of the multivariate generalisation would spend its budget on
p(p + 1)/2 entries, each of sensitivity 1 - 1/n: the noise grows with the
square of the number of levels, and with 20 levels the noisy S_xx is not
positive definite at n = 5,000 and eps = 2 in most runs. This module releases
instead, on the unit scale (columns and response in [0, 1]; dummies stay 0/1),
the entries of the upper triangle of ``Z'Z`` with ``Z = [1, u, v]`` except

* ``(1, 1) = n``, which is public;
* ``(v, v)``, which the fit does not need;
* the pairs of two different columns of one block, which are 0 for every row
  (structural zeros: no row has two dummies of one term);
* the diagonal entry of a dummy, which equals its (1, k) entry, the level's
  count (a dummy's square is itself): it is filled in from that one release,
  so the counts are released once and the matrix stays consistent (two
  independent noises on one count pull the solve apart as the levels grow);

in one Laplace release at the point's budget. They are ``W'W`` (with
``W = [1, u]``; its first row holds the sums ``sum u`` and the counts of the
levels) and ``W'v``, and the fit solves the normal equations.

Sensitivity (replace-one; :func:`structured_sensitivity`). One row's
contribution to a released entry (j, k) is ``z_j z_k``: bilinear, so the L1
change ``sum |b_j b_k - a_j a_k|`` over the released entries is convex in each
continuous coordinate of the rows a, b and is largest at a corner of the box,
where every coordinate is 0 or 1. There, with A and B the sets of columns
(other than the intercept) equal to 1 in a and in b, a released entry moves by
exactly 1 when it is in one of ``A x A`` and ``B x B`` but not both ((1, k)
entries: when k is in one of A and B). A block contributes at most one column to each set,
so the count depends only on how many continuous columns, blocks and the
response are in A only, B only or both (a block can also hold different
columns in A and B), and its largest value, enumerated exactly over those
counts, is the L1 sensitivity. It does not grow with the number of levels: one
factor and one regressor give 8 whatever the levels (10 if the dummies'
diagonals were released too), against 3 p(p + 1)/2 + 3p spread over the
centred releases. It is attained by rows at those corners.

Failure (the paper's output ⊥) is a noisy ``W'W`` that is not positive definite.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ... import noise
from . import repair

NAME = "W'W, W'y"
"""The name of the point's release (in the budget split)."""


@dataclass(frozen=True)
class Layout:
    """Which entries of the upper triangle of ``Z'Z`` (Z = [1, u, v], p slope columns) are released.

    ``tied`` holds the dummies' columns of ``W'W``, whose diagonal is their (1, k) entry.
    """

    p: int
    rows: np.ndarray
    cols: np.ndarray
    tied: np.ndarray

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
        return cls(p, rows[mask], cols[mask], np.array(sorted(block_of), dtype=np.intp))

    def values(self, U: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The released entries' exact values."""
        Z = np.column_stack([np.ones(U.shape[0]), U, v])
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


def _pairs(k: int) -> int:
    return k * (k + 1) // 2


@functools.lru_cache(maxsize=256)
def structured_sensitivity(continuous: int, block_sizes: tuple[int, ...]) -> int:
    """The exact L1 sensitivity of the released entries (module docstring), from public counts.

    ``continuous`` slope columns outside the blocks, and the blocks' numbers
    of columns. A column or block that is in neither A nor B is never best
    (moving it to B only adds at least one changed entry), so the enumeration
    puts every continuous column in A only, B only or both, and every block
    in A only, B only, both with the same column, or (two or more columns)
    both with different columns; the response in any of the four states.
    """
    blocks, wide = len(block_sizes), sum(1 for s in block_sizes if s >= 2)
    best = 0
    for v_a in (0, 1):
        for v_b in (0, 1):
            for n_ab in range(continuous + 1):
                for n_a in range(continuous - n_ab + 1):
                    n_b = continuous - n_ab - n_a
                    for f_d in range(wide + 1):
                        for f_ab in range(blocks - f_d + 1):
                            for f_a in range(blocks - f_d - f_ab + 1):
                                f_b = blocks - f_d - f_ab - f_a
                                a = n_a + n_ab + f_a + f_ab + f_d + v_a
                                b = n_b + n_ab + f_b + f_ab + f_d + v_b
                                both = n_ab + f_ab + v_a * v_b
                                # pairs in exactly one of A x A and B x B, without the unreleased (v, v)
                                # and the dummies' diagonals (tied to their (1, k) entries)
                                pairs = _pairs(a) + _pairs(b) - 2 * _pairs(both) - v_a - v_b + 2 * v_a * v_b
                                pairs -= f_a + f_b + 2 * f_d
                                best = max(best, a + b - 2 * both + pairs)
    return best


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
    noisy = np.atleast_1d(noise.laplace_mechanism(rng, rows(layout.values), float(sensitivity), eps, NAME))
    wtw, wtv = layout.matrices(noisy, n)
    return wtw, wtv, layout, sensitivity / eps


def privacy_covariance(coef: np.ndarray, wtw: np.ndarray, layout: Layout, scale: float) -> np.ndarray:
    """Delta-method covariance of the noise in ``(W'W + E)^{-1} (W'v + e)`` (unit scale).

    ``theta~ - theta^ ~ A^{-1} (e - E theta)``: e iid Laplace(scale) in every
    entry of ``W'v``, and ``E theta = G e'`` with e' the iid Laplace(scale)
    noise of the released ``W'W`` entries (:meth:`Layout.noise_map`), so
    ``Var = A^{-1} 2 scale^2 (I + G G') A^{-1}``.
    """
    G = layout.noise_map(coef)
    middle = 2.0 * scale**2 * (np.eye(coef.size) + G @ G.T)
    inverse = np.linalg.inv(wtw)
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

    NaN where ``A + E*`` is not positive definite (the mechanism's failure),
    or, given the repair's ``floor``, ``A + E*`` repaired as the release was.
    """
    size, p = targets.shape
    S = wtw + repair.noise_matrices(rng, scale, *layout.gram_pattern(), size)
    rhs = targets @ wtw + noise.laplace(rng, scale, (size, p))
    return repair.solve_refits(S, rhs, floor)
