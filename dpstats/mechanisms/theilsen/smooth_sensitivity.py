"""Smooth sensitivity of the Theil-Sen median (Alabi et al. 2022, Lemma 10) and Lemma 21's noise parameters.

The statistic. The k matchings give M pairs (M = k floor(n/2), public). A pair
with equal x defines no estimate (Algorithm 2). To keep a vector of fixed
length, the median is taken of the *doubled* vector w of length 2M: every
defined estimate, clipped to [r_l, r_u], appears twice, and every undefined
pair contributes one r_l and one r_u (half an estimate at each end of the
range, which leaves the median of the defined estimates in place). The
released statistic is the lower median w_M (1-based). Without undefined pairs
w_M is the lower median of the M estimates, and every quantity below equals
the paper's Lemma 10 evaluated on the estimates themselves (each window of
the doubled vector is a window of the original one).

Smoothness. Replacing one row changes at most L estimates (L = min(k, n - 1),
:mod:`.matchings`), hence at most K = 2L entries of w. For a vector median
under K changes per step, Lemma 10 (after Nissim, Raskhodnikova & Smith 2007)
gives the t-smooth upper bound

    S = max( w_{M+K} - w_M,  w_M - w_{M-K},
             max_{l >= 1} e^{-l t} max_{s = 0..(l+1)K} (w_{M+s} - w_{M+s-(l+1)K}) ),

with w_i = r_l for i < 1 and w_i = r_u for i > 2M (the range pads). The
l = 0 terms are the local sensitivity; the l-th term bounds the local
sensitivity of any vector within l K changes, which gives S(D) <= e^t S(D').

Exact and fast. The l-th window term is at most
U_l = e^{-l t} (w_{M+(l+1)K} - w_{M-(l+1)K}) and at most e^{-l t} (r_u - r_l); once
(l+1) K >= 2M + 1 every window spans the pads and the term is exactly
e^{-l t} (r_u - r_l). So l runs up to the first l where e^{-l t} (r_u - r_l) cannot
beat the current maximum (or saturation), the bounds U_l are computed for all
those l at once, and the O((l+1)K) sliding-window maximum is evaluated only for
the l whose bound beats the running maximum, in decreasing order of bound.
"""

from __future__ import annotations

import math

import numpy as np

CHUNK = 1 << 20
CHUNK_L = 4096


def student_t_parameters(eps: float, df: float, beta: float) -> tuple[float, float]:
    """Lemma 21: ``t = eps beta / (d + 1)``, ``s = 2 sqrt(d) (eps - t (d + 1)) / (d + 1)``.

    Raises ValueError unless ``|t| (d + 1) < eps`` (the lemma's condition).
    """
    t = eps * beta / (df + 1.0)
    if not abs(t) * (df + 1.0) < eps:
        raise ValueError("beta must satisfy |t| (df + 1) < eps, i.e. 0 < beta < 1")
    s = 2.0 * math.sqrt(df) * (eps - t * (df + 1.0)) / (df + 1.0)
    return t, s


class DoubledVector:
    """The doubled, padded vector w of the module docstring, indexed lazily (no 2M array is built).

    ``values_sorted`` are the sorted defined estimates, or only a band of them:
    the ones of ranks ``offset`` .. ``offset + len - 1`` among ``n_defined``
    (dpstats/mechanisms/theilsen/banded_pairs.py keeps the band Lemma 10 reads,
    so that all pairs need memory linear in n). Reading outside the band is an
    error, never a guess.
    """

    def __init__(
        self,
        values_sorted: np.ndarray,
        n_undefined: int,
        lo: float,
        hi: float,
        offset: int = 0,
        n_defined: int | None = None,
    ) -> None:
        self.v = np.asarray(values_sorted, dtype=float)
        self.t_count = int(n_undefined)
        self.lo, self.hi = float(lo), float(hi)
        self.offset = int(offset)
        self.n_defined = self.v.size if n_defined is None else int(n_defined)
        self.m = self.n_defined + self.t_count
        self.length = 2 * self.m

    def at(self, index: np.ndarray | int) -> np.ndarray:
        """w at 1-based positions ``index`` (any integers: the pads extend w both ways)."""
        i = np.asarray(index, dtype=np.int64)
        inner = i - self.t_count - 1
        out = np.where(i <= self.t_count, self.lo, self.hi)
        mid = (inner >= 0) & (inner < 2 * self.n_defined)
        band = inner // 2 - self.offset
        if np.any(mid & ((band < 0) | (band >= self.v.size))):
            raise IndexError("a rank outside the band of estimates that was kept")
        if self.v.size:
            out = np.where(mid, self.v[np.clip(band, 0, self.v.size - 1)], out)
        return out

    def median(self) -> float:
        """The lower median w_M of the doubled vector (r_l when there is no pair at all)."""
        return float(self.at(self.m)) if self.m else self.lo


def _window_max(w: DoubledVector, m: int, span: int) -> float:
    """max over s = 0..span of w_{m+s} - w_{m+s-span}, in chunks (bounded memory)."""
    out = -math.inf
    for start in range(0, span + 1, CHUNK):
        s = np.arange(start, min(span + 1, start + CHUNK), dtype=np.int64)
        out = max(out, float(np.max(w.at(m + s) - w.at(m + s - span))))
    return out


def smooth_sensitivity(w: DoubledVector, lipschitz: int, t: float) -> float:
    """Lemma 10's t-smooth upper bound S (module docstring), computed exactly."""
    k = 2 * int(lipschitz)
    m = w.m
    med = float(w.at(m))
    best = max(float(w.at(m + k)) - med, med - float(w.at(m - k)), 0.0)
    width = w.hi - w.lo
    if width <= 0.0:
        return best
    saturation = max(1, math.ceil((2 * m + 1) / k) - 1)
    first = 1
    while first <= saturation:
        stop = math.floor(math.log(width / best) / t) if best > 0 else saturation
        last = min(saturation, stop, first + CHUNK_L - 1)
        if last < first:
            break
        ls = np.arange(first, last + 1, dtype=np.int64)
        spans = (ls + 1) * k
        decay = np.exp(-ls * t)
        bounds = decay * (w.at(m + spans) - w.at(m - spans))
        for idx in np.argsort(-bounds, kind="stable"):
            if bounds[idx] <= best:
                break
            best = max(best, float(decay[idx]) * _window_max(w, m, int(spans[idx])))
        first = last + 1
    return best
