"""Approximate Tukey depth on axis-aligned boxes (Amin, Joseph, Ribero, Vassilvitskii 2023).

The geometry behind ``method="tukey"`` (dpstats/mechanisms/tukey/mechanism.py), for m points
("models") in R^d held as their sorted coordinates ``P`` (shape ``(d, m)``, row j
sorted increasingly, 0-indexed):

* Approximate Tukey depth (Definition 2.5): ``T(y) = min_j min(#{P_j <= y_j}, #{P_j >= y_j})``,
  the Tukey depth with the 2d axis-aligned halfspaces only.
* The region of depth ``>= i`` (1 <= i <= I = floor((m + 1) / 2)) is the box with
  sides ``[P_j[i - 1], P_j[m - i]]`` (Lemma 3.3); ``V_i`` is its volume. By
  convention ``V_0 = inf`` (all of R^d) and ``V_i = 0`` for ``i > I``. Everything is
  kept as ``log V_i`` (-inf for a zero volume), so that nothing under- or
  overflows at any eps or scale.
* The shell of depth exactly ``i`` is split by the first coordinate j at which
  the depth is exactly i (Definition 7.2, Lemma 7.4): the piece ``R_ij`` is the
  product of the depth ``> i`` sides before j, the two end gaps of coordinate j,
  and the depth ``>= i`` sides after j. Its volume is a product of lengths that
  are computed as differences of adjacent order statistics (no cancellation).

Replace-one structure. Replacing one of the m points changes every halfspace
count by -1, 0 or +1, so ``|T_Y(y) - T_Y'(y)| <= 1`` for every y and the boxes
are sandwiched, ``V_{i+1}(Y) <= V_i(Y') <= V_{i-1}(Y)``. The order statistics of
Y and Y' interleave exactly, and float subtraction, log and summation are
monotone, so the sandwich also holds for the computed ``log V`` (this is what
makes :func:`distance_to_unsafety` exactly 1-sensitive in floating point).
"""

from __future__ import annotations

import math

import numpy as np


def sorted_projections(models: np.ndarray) -> np.ndarray:
    """``(d, m)``: each coordinate of the ``(m, d)`` models, sorted increasingly."""
    return np.sort(np.asarray(models, dtype=float).T, axis=1)


def max_depth(m: int) -> int:
    """I = floor((m + 1) / 2), the largest approximate Tukey depth among m points."""
    return (m + 1) // 2


def restricted_depth(m: int) -> int:
    """t = floor(floor(m / 2) / 2), the least depth the mechanism may output (about m / 4)."""
    return (m // 2) // 2


def log_side_lengths(P: np.ndarray) -> np.ndarray:
    """``(I + 2, d)``: row i holds the log side lengths of the depth ``>= i`` box.

    Row 0 is +inf (depth >= 0 is all of R^d) and row I + 1 is -inf (empty).
    """
    d, m = P.shape
    top = max_depth(m)
    i = np.arange(1, top + 1)
    out = np.empty((top + 2, d))
    out[0], out[top + 1] = np.inf, -np.inf
    with np.errstate(divide="ignore"):
        out[1 : top + 1] = np.log(P[:, m - i] - P[:, i - 1]).T
    return out


def log_volumes(log_lengths: np.ndarray) -> np.ndarray:
    """``log V_i`` for i = 0 .. I + 1 (Lemma 3.3): the sum of the log side lengths."""
    return log_lengths.sum(axis=1)


def distance_to_unsafety(log_vol: np.ndarray, t: int, beta: float, delta: float) -> int:
    """A lower bound on the number of model replacements that make the data unsafe.

    ``1 + max{k >= 0 : exists g >= 0 with log V_{t-k-2} - log V_{t+k+g+1} - beta g <= log(delta / (1 + e^beta))}``,
    or 0 when no k qualifies: our replace-one version of Brown et al. (2021),
    Lemma 3.8 and Amin et al. (2023), Lemma 3.6 (proof in dpstats/mechanisms/tukey/mechanism.py).
    It is 1-sensitive under replace-one neighbours (``k`` and ``k - 1`` with the
    same g, by the sandwich) and monotone in k (``k - 1`` with the same g), so a
    binary search over k finds the largest. ``beta`` is the sampler's exponent
    eps2 / 2.
    """
    top = log_vol.size - 2
    c = math.log(delta) - float(np.logaddexp(0.0, beta))

    def holds(k: int) -> bool:
        high = log_vol[t + k + 1 : top + 1]  # g = 0 .. I - t - k - 1
        if high.size == 0:
            return False
        with np.errstate(invalid="ignore"):
            return bool(np.any((log_vol[t - k - 2] - high) - beta * np.arange(high.size) <= c))

    lo, hi = -1, t - 3  # holds(lo) is taken as true; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _gap_lengths(P: np.ndarray, depths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per depth i (rows) and coordinate j (columns): left gap length, right gap start, right gap length.

    For i < I the set of depth exactly i in coordinate j is ``[P[i-1], P[i]]``
    and ``[P[m-i-1], P[m-i]]``; at i = I it is the whole middle interval
    ``[P[I-1], P[m-I]]``, held as the left gap (the right gap is then empty).
    """
    m = P.shape[1]
    top = max_depth(m)
    inner = (depths < top)[:, None]
    left_end = np.where(inner, P[:, np.minimum(depths, m - 1)].T, P[:, m - top][None, :])
    left = left_end - P[:, depths - 1].T
    right_start = P[:, np.maximum(m - depths - 1, 0)].T
    right = np.where(inner, P[:, m - depths].T - right_start, 0.0)
    return left, right_start, right


def shell_log_volumes(P: np.ndarray, log_lengths: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The depths ``t .. I`` and the ``(I - t + 1, d)`` log volumes of the pieces ``R_ij`` (Lemma 7.4).

    ``log vol R_ij = sum_{l<j} log len_{i+1,l} + log gap_{ij} + sum_{l>j} log len_{i,l}``;
    the pieces of depth i partition its shell, so their volumes add up to
    ``V_i - V_{i+1}`` (Definition 3.8).
    """
    depths = np.arange(t, max_depth(P.shape[1]) + 1)
    left, _, right = _gap_lengths(P, depths)
    with np.errstate(divide="ignore"):
        log_gap = np.log(left + right)
    inner, outer = log_lengths[depths + 1], log_lengths[depths]
    before = np.zeros_like(inner)
    before[:, 1:] = np.cumsum(inner, axis=1)[:, :-1]
    after = np.zeros_like(outer)
    after[:, :-1] = np.cumsum(outer[:, ::-1], axis=1)[:, ::-1][:, 1:]
    return depths, before + log_gap + after


def restricted_mass_is_positive(P: np.ndarray, t: int) -> bool:
    """True when the region of depth ``>= t`` has positive volume (the sampler is defined)."""
    _, pieces = shell_log_volumes(P, log_side_lengths(P), t)
    return bool(np.any(np.isfinite(pieces)))


def depth(P: np.ndarray, y: np.ndarray) -> np.ndarray | int:
    """Approximate Tukey depth of each point ``y`` (``(d,)`` or ``(k, d)``) among the models."""
    d, m = P.shape
    pts = np.atleast_2d(np.asarray(y, dtype=float))
    out = np.full(pts.shape[0], m, dtype=int)
    for j in range(d):
        below = np.searchsorted(P[j], pts[:, j], side="right")
        above = m - np.searchsorted(P[j], pts[:, j], side="left")
        out = np.minimum(out, np.minimum(below, above))
    return int(out[0]) if np.ndim(y) == 1 else out


# --------------------------------------------------------------------------
# The exact law of the sampler, for the goodness-of-fit audit
# --------------------------------------------------------------------------


def continuous_depth(P: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``c(y) = min_j c_j(y_j)``, a continuous refinement of the depth: ``floor(c(y)) = T(y)``.

    ``c_j`` is piecewise linear through the knots ``P_j[k] -> k + 1`` (left half),
    ``P_j[k] -> m - k`` (right half) and, for even m, the midpoint of the middle
    interval -> I + 1; it is 0 outside ``[P_j[0], P_j[m-1]]``. Inside the shell of
    depth i, ``c >= i + u`` is the box :func:`shrunk_box_log_volume` measures, so
    the law of ``c(y)`` under the sampler has an exact CDF (:func:`continuous_depth_cdf`).
    Needs distinct coordinates.
    """
    d, m = P.shape
    top = max_depth(m)
    pts = np.atleast_2d(np.asarray(y, dtype=float))
    out = np.full(pts.shape[0], np.inf)
    ks = np.arange(m)
    vals = np.where(ks < top, ks + 1, m - ks).astype(float)
    for j in range(d):
        xs, ys = P[j], vals
        if m % 2 == 0:
            xs = np.insert(xs, top, 0.5 * (P[j, top - 1] + P[j, top]))
            ys = np.insert(vals, top, top + 1.0)
        out = np.minimum(out, np.interp(pts[:, j], xs, ys, left=0.0, right=0.0))
    return out


def shrunk_box_log_volume(P: np.ndarray, i: int, u: np.ndarray) -> np.ndarray:
    """``log vol{y : c(y) >= i + u}`` for ``0 <= u <= 1`` (``u`` an array)."""
    m = P.shape[1]
    top = max_depth(m)
    u = np.asarray(u, dtype=float)[:, None]
    if i < top:
        lo = P[:, i - 1] + u * (P[:, i] - P[:, i - 1])
        hi = P[:, m - i] - u * (P[:, m - i] - P[:, m - i - 1])
    else:
        half = 0.5 * (P[:, m - top] - P[:, top - 1])
        lo, hi = P[:, top - 1] + u * half, P[:, m - top] - u * half
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(hi - lo, 0.0)).sum(axis=1)


def continuous_depth_cdf(P: np.ndarray, t: int, beta: float):
    """The exact CDF of ``continuous_depth(P, y)`` for y drawn by dpstats/mechanisms/tukey/exact_draw.py.

    ``P(c >= i + u) = sum_{i' > i} pi_i' + pi_i (vol{c >= i + u} - V_{i+1}) / (V_i - V_{i+1})``
    with ``pi_i`` proportional to ``(V_i - V_{i+1}) exp(beta i)``.
    """
    lengths = log_side_lengths(P)
    depths, pieces = shell_log_volumes(P, lengths, t)
    log_shell = np.logaddexp.reduce(pieces, axis=1)
    scores = log_shell + beta * depths
    probs = np.exp(scores - np.logaddexp.reduce(scores))
    above = np.concatenate([np.cumsum(probs[::-1])[::-1][1:], [0.0]])  # P(T > i)
    log_v = log_volumes(lengths)

    def cdf(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        out = np.where(x < t, 0.0, 1.0)
        for k, i in enumerate(depths):
            inside = (x >= i) & (x < i + 1)
            if not np.any(inside) or probs[k] == 0:
                continue
            u = x[inside] - i
            shrunk = np.exp(shrunk_box_log_volume(P, int(i), u) - log_shell[k])
            inner = np.exp(log_v[i + 1] - log_shell[k])
            out[inside] = 1.0 - (above[k] + probs[k] * np.clip(shrunk - inner, 0.0, 1.0))
        return out

    return cdf
