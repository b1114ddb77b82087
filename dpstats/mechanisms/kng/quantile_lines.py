"""Quantile regression's target for the K-norm gradient sampler: its walkers and its exact line draws.

The gradient ``g(theta) = sum_i x_i (1{y_i <= x_i'theta} - tau)`` (Reimherr & Awan 2019, section 4.5) is
piecewise constant on the cells of the arrangement of the n hyperplanes ``y_i = x_i'theta``: on a line it
changes at n cuts. :class:`QuantileTarget` draws the exact conditional of ``exp(-c ||g||_K)`` on a line:
the window of the cuts that can hold mass is bucketed, buckets with mass are sorted into exact pieces, and
the other buckets and the tails are drawn by rejection from a lower bound of ``||g||_K``. Its walkers
carry their residuals between moves (:class:`_Walkers`). The chains that move the walkers, and the
least-squares target, are in dpstats/mechanisms/kng/sampler.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ...privacy import noise
from .sampler import DUAL_NORM, k_norm

#: Quantile lines with more rows than this look only at a window of their cuts, placed from a stride sample
#: of about this many rows (:func:`_sampled_window`; a speed setting: every value gives exact draws).
WINDOW_SAMPLE = 512
#: The window is meant to hold every t whose density is within e^-NEGLIGIBLE of the largest at its bucket edges.
NEGLIGIBLE = 20.0
#: The sampled window reaches WINDOW_MARGIN times as far as needed, plus WINDOW_EXTRA sampled cuts;
#: an end that falls short moves out at least WINDOW_GROWTH times the window's length (QuantileTarget.sample_line).
WINDOW_MARGIN = 1.5
WINDOW_EXTRA = 2
WINDOW_GROWTH = 1.0
#: Cuts per bucket of a line's window, on average (_buckets; a speed setting: every value gives exact draws).
BUCKET_CUTS = 24
#: A bucket is sorted into exact pieces if its bound is within e^-SORTED of the largest density at an edge (else it
#: is drawn by rejection; _line_items; a speed setting: every value gives exact draws).
SORTED = 12.0


@dataclass
class _Walkers:
    """Where a quantile line draw left its lines, so that a draw from exactly there need not start afresh.

    ``theta`` holds the points ``theta + t u``; ``r = y - X theta`` there is
    the old residual less ``t X u`` (``X (theta + t u) = X theta + t X u``),
    ``below`` is ``r <= 0`` and ``g`` the gradient: the old one plus the rows
    that went below the fit, less those that left it (exactly the rows whose
    sign of r changed, so g stays consistent with r).
    """

    theta: np.ndarray
    r: np.ndarray
    below: np.ndarray
    g: np.ndarray


@dataclass(frozen=True)
class QuantileTarget:
    """``g(theta) = sum_i w_i x_i (1{y_i <= x_i'theta} - tau)`` (section 4.5; ``w_i`` the survey weights
    ``row_weights``, 1 when None).

    Identical rows (x and y) cross the fit together, so g is kept as a sum over
    the distinct rows, each with its multiplicity (the sum of its rows' weights): the same function of theta
    with fewer rows to pass over (discrete data have many ties). Every bound below (:func:`_bucket_bounds`,
    :func:`_sampled_window`) counts a distinct row by this weight, so the draws stay exact with weights.
    """

    X: np.ndarray
    y: np.ndarray
    tau: float
    c: float
    norm: str
    #: The rows' survey weights (None: every row weighs 1).
    row_weights: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: The distinct rows of X, transposed and stored row-major, so that the products with it are contiguous
    #: passes. They are ``np.einsum`` loops, not BLAS: with a dimension of size d, a threaded BLAS on a busy
    #: machine is slower than the loop by orders of magnitude (8 ms against 0.3 ms for 6 lines at n = 10^5).
    XT: np.ndarray = field(init=False, repr=False, compare=False)
    #: The distinct rows' responses and how many rows each stands for (their weights' sum).
    v: np.ndarray = field(init=False, repr=False, compare=False)
    weight: np.ndarray = field(init=False, repr=False, compare=False)
    #: ``tau sum_i x_i``: g is the sum of the rows below the fit minus this.
    offset: np.ndarray = field(init=False, repr=False, compare=False)
    #: ``max_i |x_ij|`` per coordinate: no cut moves ``g_j`` further (the buckets' bounds, :func:`_bucket_bounds`).
    x_max: np.ndarray = field(init=False, repr=False, compare=False)
    #: Arrays of n numbers per line that :meth:`sample_line` reuses, by batch size (shared by the copies
    #: ``dataclasses.replace`` makes), so that a chain does not allocate and page them in at every move.
    scratch: dict[int, tuple[np.ndarray, ...]] = field(default_factory=dict, repr=False, compare=False)
    #: Where the last line draw of each batch size left its lines (:class:`_Walkers`; this target's own).
    walkers: dict[int, _Walkers] = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        rows, weight = _distinct_rows(np.column_stack([self.X, self.y]).astype(float), self.row_weights)
        object.__setattr__(self, "XT", np.ascontiguousarray(rows[:, :-1].T))
        object.__setattr__(self, "v", np.ascontiguousarray(rows[:, -1]))
        object.__setattr__(self, "weight", weight.astype(float))
        object.__setattr__(self, "offset", self.tau * self.XT @ self.weight)
        object.__setattr__(self, "x_max", np.abs(self.XT).max(axis=1, initial=0.0))

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Gradients at the rows of ``theta``."""
        below = (self.v[None, :] <= np.einsum("kd,dn->kn", theta, self.XT)) * self.weight
        return np.einsum("kn,dn->kd", below, self.XT) - self.offset

    def utility(self, theta: np.ndarray) -> np.ndarray:
        """``||g(theta)||_K`` at the rows of ``theta``."""
        return k_norm(self.gradient(theta), self.norm)

    def gradient_on_line(self, r: np.ndarray, a: np.ndarray, t: np.ndarray) -> np.ndarray:
        """g at ``theta + t u`` per line, from ``r = y - X theta`` and ``a = X u`` (one line per row)."""
        return np.einsum("kn,dn->kd", (r <= t[:, None] * a) * self.weight, self.XT) - self.offset

    def sample_line(
        self, rng: np.random.Generator, theta: np.ndarray, u: np.ndarray, t_lo: np.ndarray, t_hi: np.ndarray
    ) -> np.ndarray:
        """An exact draw of t from the piecewise-constant conditional density on each chord.

        With ``r_i = y_i - x_i'theta`` and ``a_i = x_i'u``, row i is below the
        fit at ``theta + t u`` iff ``r_i <= t a_i``: it joins the sum (``+x_i``)
        when t passes the cut ``r_i / a_i`` upwards if ``a_i > 0`` and leaves it
        (``-x_i``) if ``a_i < 0``, so g is piecewise constant with n breakpoints.
        Only the cuts inside a window ``[t_a, t_b]`` holding 0 are looked at one
        by one, and only some of them are sorted: the window is cut into buckets
        at fixed edges (:func:`_buckets`), whose sums give g exactly at every edge
        and a lower bound of ``||g||_K`` on every bucket, and the buckets whose
        bound is within ``NEGLIGIBLE / c`` of the smallest ``||g||_K`` at an edge
        are sorted into exact pieces (:func:`_exact_pieces`). Beyond the window,
        ``h(t) = u'g(theta + t u)`` (the derivative of the convex loss along the
        line: nondecreasing, each cut adds ``|a_i|``) bounds
        ``||g||_K >= |h| / ||u||_K*`` (the dual norm) by its value at the
        window's end. The tails and the unsorted buckets are drawn by rejection
        from their bounds (:func:`_draw_items`): every draw is exact. The window
        is meant to hold every t whose density is within ``e^-NEGLIGIBLE`` of the
        largest density m at an edge: it is accepted once
        ``|h| >= ||u||_K* (m + NEGLIGIBLE / c)`` at both ends (or an end is the
        chord's). With more than :data:`WINDOW_SAMPLE` rows it is first placed
        from a stride sample of the cuts (:func:`_sampled_window`, with m at its
        largest, ``||g||_K`` at t = 0), and an end that falls short moves out
        (:func:`_widened`); with fewer rows the window is the chord. A draw from
        where the last one left its lines starts from there (:class:`_Walkers`).
        """
        walkers = self._walkers(theta)
        a, cuts, mask = self._lines(walkers.r, u)
        g_0, dual = walkers.g, k_norm(u, DUAL_NORM[self.norm])
        if self.v.size > WINDOW_SAMPLE:
            reach = dual * (k_norm(g_0, self.norm) + NEGLIGIBLE / self.c)
            t_a, t_b = _sampled_window(a, cuts, (g_0 * u).sum(axis=1), reach, t_lo, t_hi, self.weight)
        else:
            t_a, t_b = t_lo, t_hi
        t_a, t_b = np.minimum(t_a, 0.0), np.maximum(t_b, 0.0)
        while True:
            window = _window_cuts(a, cuts, mask, t_a, t_b)
            buckets = _buckets(self, window, g_0, t_a, t_b)
            h_a, h_b = (buckets.g[:, 0] * u).sum(axis=1), (buckets.g[:, -1] * u).sum(axis=1)
            reach = dual * (buckets.least + NEGLIGIBLE / self.c)
            short_a, short_b = (t_a > t_lo) & (h_a > -reach), (t_b < t_hi) & (h_b < reach)
            if not (short_a.any() or short_b.any()):
                break
            t_a, t_b = _widened((t_lo, t_a, t_b, t_hi), h_a, h_b, reach, short_a, short_b)
        tails = _Items.tails(t_lo, t_a, t_b, t_hi, np.maximum(-h_a, 0.0) / dual, np.maximum(h_b, 0.0) / dual)
        t = _draw_items(rng, self, walkers.r, a, _line_items(self, window, buckets, tails))
        self._move(walkers, u, t, a, mask)
        return t

    def _walkers(self, theta: np.ndarray) -> _Walkers:
        """The lines' residuals, rows below the fit and gradients at ``theta``: kept from the last draw if it left
        its lines exactly there, else computed."""
        kept = self.walkers.get(theta.shape[0])
        if kept is not None and np.array_equal(kept.theta, theta):
            return kept
        r = self.v - np.einsum("kd,dn->kn", theta, self.XT)
        below = r <= 0.0
        g = np.einsum("kn,dn->kd", below * self.weight, self.XT) - self.offset
        self.walkers[theta.shape[0]] = walkers = _Walkers(theta, r, below, g)
        return walkers

    def _lines(self, r: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(a, cuts, mask)`` per line: ``a = X u``, the cuts ``r / a`` and boolean scratch space (arrays of
        :attr:`scratch`)."""
        k = r.shape[0]
        if k not in self.scratch:
            self.scratch[k] = (*(np.empty((k, self.v.size)) for _ in range(2)), np.empty((k, self.v.size), dtype=bool))
        a, cuts, mask = self.scratch[k]
        np.einsum("kd,dn->kn", u, self.XT, out=a)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(r, a, out=cuts)
        return a, cuts, mask

    def _move(self, walkers: _Walkers, u: np.ndarray, t: np.ndarray, a: np.ndarray, mask: np.ndarray) -> None:
        """Move ``walkers`` to ``theta + t u`` (:class:`_Walkers`; ``mask``: boolean scratch space)."""
        walkers.theta = walkers.theta + t[:, None] * u
        walkers.r -= np.multiply(a, t[:, None], out=a)
        now = np.less_equal(walkers.r, 0.0, out=mask)
        changed = np.flatnonzero(np.not_equal(now, walkers.below, out=walkers.below))
        np.copyto(walkers.below, now)
        line, row = np.divmod(changed, self.v.size)
        moves = np.take(self.XT, row, axis=1) * np.where(now.ravel()[changed], 1.0, -1.0) * self.weight[row]
        walkers.g += np.stack([np.bincount(line, m, minlength=t.size) for m in moves], axis=1)


def _distinct_rows(rows: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``rows`` (sorted) and how many times each occurs (the sum of its ``weights``)."""
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    starts = np.flatnonzero(new)
    if weights is None:
        return ordered[starts], np.diff(np.append(starts, len(ordered)))
    sums = np.add.reduceat(np.asarray(weights, dtype=float)[order], starts) if starts.size else np.zeros(0)
    return ordered[starts], sums


def _sampled_window(
    a: np.ndarray,
    cuts: np.ndarray,
    h_0: np.ndarray,
    reach: np.ndarray,
    t_lo: np.ndarray,
    t_hi: np.ndarray,
    weight: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(t_a, t_b)``: a window placed from every s-th row's cut, ``s = n // WINDOW_SAMPLE``.

    The sampled cuts inside the chord, in order, each adding ``s |a_i|`` times the row's ``weight``,
    give h approximately on the line (exactly ``h_0`` at t = 0); the window
    is where it lies within ``-+ WINDOW_MARGIN reach`` (around the minimum of
    the loss on the line, where h crosses 0), widened by :data:`WINDOW_EXTRA`
    sampled cuts at each end. It only decides how much of the line is looked
    at, never the draw.
    """
    stride = cuts.shape[1] // WINDOW_SAMPLE
    sampled = cuts[:, ::stride]
    inside = (sampled > t_lo[:, None]) & (sampled < t_hi[:, None])
    order = np.argsort(np.where(inside, sampled, np.inf), axis=1)
    inside = np.take_along_axis(inside, order, 1)
    position = np.concatenate(
        [t_lo[:, None], np.where(inside, np.take_along_axis(sampled, order, 1), t_hi[:, None]), t_hi[:, None]], axis=1
    )
    h = np.zeros((order.shape[0], order.shape[1] + 1))  # h on the piece after j sampled cuts
    np.cumsum(
        np.where(inside, stride * np.take_along_axis(np.abs(a[:, ::stride]) * weight[::stride], order, 1), 0.0),
        axis=1,
        out=h[:, 1:],
    )
    rows = np.arange(h.shape[0])
    h += (h_0 - h[rows, np.count_nonzero(inside & (position[:, 1:-1] <= 0.0), axis=1)])[:, None]
    last = h.shape[1] - 1
    left = np.count_nonzero(h <= -WINDOW_MARGIN * reach[:, None], axis=1)
    right = last + 1 - np.count_nonzero(h >= WINDOW_MARGIN * reach[:, None], axis=1)
    return position[rows, np.maximum(left - WINDOW_EXTRA, 0)], position[
        rows, np.minimum(right + WINDOW_EXTRA, last + 1)
    ]


def _widened(
    chord: tuple[np.ndarray, ...],
    h_a: np.ndarray,
    h_b: np.ndarray,
    reach: np.ndarray,
    short_a: np.ndarray,
    short_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The window ``(t_a, t_b)`` with each short end moved out, ``chord = (t_lo, t_a, t_b, t_hi)``.

    An end moves to where the rate at which h grew inside the window says it
    will pass ``-+ reach`` (with :data:`WINDOW_MARGIN`), and at least
    :data:`WINDOW_GROWTH` times the window's length plus a
    :data:`WINDOW_SAMPLE`-th of the chord further, within the chord.
    """
    t_lo, t_a, t_b, t_hi = chord
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = (h_b - h_a) / (t_b - t_a)
        far_a = t_a - WINDOW_MARGIN * (h_a + reach) / rate
        far_b = t_b + WINDOW_MARGIN * (reach - h_b) / rate
    step = WINDOW_GROWTH * (t_b - t_a) + (t_hi - t_lo) / WINDOW_SAMPLE
    t_a = np.where(short_a, np.maximum(t_lo, np.fmin(far_a, t_a - step)), t_a)
    t_b = np.where(short_b, np.minimum(t_hi, np.fmax(far_b, t_b + step)), t_b)
    return t_a, t_b


@dataclass(frozen=True)
class _WindowCuts:
    """The cuts strictly inside each line's window, one entry per cut (all lines, in row order: by line).

    ``line`` and ``row`` index the line and the data row, ``value`` is the cut
    ``r_i / a_i`` and ``sign`` is ``sign(a_i)``: passing the cut upwards adds
    ``sign x_i`` to g.
    """

    line: np.ndarray
    row: np.ndarray
    value: np.ndarray
    sign: np.ndarray


def _window_cuts(a: np.ndarray, cuts: np.ndarray, mask: np.ndarray, t_a: np.ndarray, t_b: np.ndarray) -> _WindowCuts:
    """The cuts in ``(t_a, t_b)`` of each line (``mask``: scratch space of the shape of ``cuts``)."""
    k, n = cuts.shape
    np.greater(cuts, t_a[:, None], out=mask)
    mask &= cuts < t_b[:, None]
    index = np.flatnonzero(mask)
    line = np.repeat(np.arange(k), np.diff(np.searchsorted(index, np.arange(k + 1) * n)))
    return _WindowCuts(line, index - line * n, cuts.ravel()[index], np.sign(a.ravel()[index]))


@dataclass(frozen=True)
class _Buckets:
    """Each line's window cut into buckets at fixed edges, 0 among them (one row per line).

    Bucket j of a line is ``(edges[j], edges[j + 1]]``; the buckets cover
    the window, and rows are padded with empty buckets at t_b (the last column
    starts no bucket). ``g[:, j]`` is g just right of edge j (at t_b and
    beyond: just left of t_b), ``bound[:, j]`` a lower bound of ``||g||_K`` on
    bucket j, ``least`` the smallest ``||g||_K`` at a line's edges (so at
    least the smallest on its window), ``at`` the bucket of each cut of the
    window as an index into the flattened rows.
    """

    edges: np.ndarray
    g: np.ndarray
    bound: np.ndarray
    least: np.ndarray
    at: np.ndarray


def _buckets(
    target: QuantileTarget, window: _WindowCuts, g_0: np.ndarray, t_a: np.ndarray, t_b: np.ndarray
) -> _Buckets:
    """The window's buckets: one even grid per line through 0, about :data:`BUCKET_CUTS` cuts a bucket.

    g at the edges is g at 0 (``g_0``) plus or minus the sums of the moves of
    the buckets in between (one pass over the window's cuts, no sorting).
    """
    k, d = g_0.shape
    edges, step, left = _bucket_grid(window.line, t_a, t_b)
    at = _bucket_of(window, edges, step, left)
    weight = target.weight[window.row]
    moves = np.take(target.XT, window.row, axis=1)
    moves *= window.sign * weight
    sums = np.zeros((*edges.shape, d))
    for j, m in enumerate(moves):  # each bincount is float, also when the window holds no cut
        sums[..., j] = np.bincount(at, m, minlength=edges.size).reshape(edges.shape)
    count = np.bincount(at, weight, minlength=edges.size).reshape(edges.shape)
    g = np.zeros_like(sums)
    np.cumsum(sums[:, :-1], axis=1, out=g[:, 1:])
    g += (g_0 - g[np.arange(k), left])[:, None, :]
    bound = np.full(edges.shape, np.inf)
    bound[:, :-1] = _bucket_bounds(target, g, sums[:, :-1], count[:, :-1])
    return _Buckets(edges, g, bound, k_norm(g, target.norm).min(axis=1), at)


def _bucket_grid(line: np.ndarray, t_a: np.ndarray, t_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(edges, step, left)``: an even grid through 0 on each line's window, about :data:`BUCKET_CUTS` of the
    window's cuts (``line``: the line of each, nondecreasing) a bucket, ``left`` buckets below 0."""
    cuts = np.diff(np.searchsorted(line, np.arange(t_a.size + 1)))
    step = (t_b - t_a) / np.maximum(-(-cuts // BUCKET_CUTS), 1)
    step = np.where(step > 0.0, step, 1.0)  # a window of length 0 holds no cuts and gets no bucket
    left, right = np.ceil(-t_a / step).astype(np.intp), np.ceil(t_b / step).astype(np.intp)
    return _bucket_edges(t_a, t_b, step, left, left + right), step, left


def _bucket_edges(t_a: np.ndarray, t_b: np.ndarray, step: np.ndarray, left: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The edges ``(j - left) step`` of each line, j = 0 to ``size``, clipped to ``[t_a, t_b]``; edge 0 is t_a, edge
    ``size`` t_b, and rows are padded with t_b (at least one more edge). Nondecreasing, with 0 at edge ``left``."""
    j = np.arange(size.max() + 2)[None, :]
    edges = np.where(
        j >= size[:, None], t_b[:, None], np.clip((j - left[:, None]) * step[:, None], t_a[:, None], t_b[:, None])
    )
    edges[:, 0] = t_a
    return edges


def _bucket_of(window: _WindowCuts, edges: np.ndarray, step: np.ndarray, left: np.ndarray) -> np.ndarray:
    """The bucket ``(edges[j], edges[j + 1]]`` holding each cut, as an index into ``edges.ravel()``.

    A guess from the grid, ``j = left + ceil(t / step) - 1``, then exact comparisons with the edges.
    """
    width = edges.shape[1]
    start = window.line * width
    guess = window.value * (1.0 / step)[window.line]
    guess += (np.arange(left.size) * width + left - 1)[window.line]
    at = np.maximum(np.ceil(guess).astype(np.intp), start)
    flat = edges.ravel()
    while True:
        down, up = window.value <= flat[at], window.value > flat[at + 1]
        if not (down.any() or up.any()):
            return at
        at += up.astype(np.intp) - down


def _bucket_bounds(target: QuantileTarget, g: np.ndarray, sums: np.ndarray, count: np.ndarray) -> np.ndarray:
    """A lower bound of ``||g||_K`` on each bucket, from the box that holds g there.

    Inside bucket j, g walks from ``g[:, j]`` to ``g[:, j + 1]`` by the moves
    of its cuts, each at most ``x_max`` in coordinate l per row it stands for,
    so with ``count`` rows the walk's total variation in l is at most
    ``count x_max_l`` and ``g_l`` stays within
    ``(count x_max_l - |sum_l|) / 2`` of the interval between the two ends. The
    K-norm's smallest value on that box is the norm of each coordinate's
    distance from 0.
    """
    spare = np.maximum(count[..., None] * target.x_max - np.abs(sums), 0.0) / 2.0
    low = np.minimum(g[:, :-1], g[:, 1:]) - spare
    high = np.maximum(g[:, :-1], g[:, 1:]) + spare
    return k_norm(np.maximum(np.maximum(low, -high), 0.0), target.norm)


@dataclass(frozen=True)
class _Items:
    """What each line's draw chooses from: exact pieces and envelopes, one entry each (lines in any order).

    ``bound`` is ``||g||_K`` on an exact piece (``exact``) and a lower bound
    of it on an envelope (a tail beyond the window, or a bucket left
    unsorted), where a t drawn is kept with probability
    ``e^(-c (||g(t)||_K - bound))``.
    """

    line: np.ndarray
    start: np.ndarray
    length: np.ndarray
    bound: np.ndarray
    exact: np.ndarray

    @classmethod
    def tails(
        cls, t_lo: np.ndarray, t_a: np.ndarray, t_b: np.ndarray, t_hi: np.ndarray, left: np.ndarray, right: np.ndarray
    ) -> _Items:
        """The envelopes ``[t_lo, t_a]`` and ``[t_b, t_hi]`` with bounds ``left`` and ``right``."""
        line = np.arange(t_lo.size)
        return cls(
            np.concatenate([line, line]),
            np.concatenate([t_lo, t_b]),
            np.concatenate([t_a - t_lo, t_hi - t_b]),
            np.concatenate([left, right]),
            np.zeros(2 * line.size, dtype=bool),
        )

    @classmethod
    def join(cls, *parts: _Items) -> _Items:
        """All the parts' items."""
        return cls(*(np.concatenate([getattr(part, f.name) for part in parts]) for f in fields(cls)))


def _line_items(target: QuantileTarget, window: _WindowCuts, buckets: _Buckets, tails: _Items) -> _Items:
    """The tails, the buckets left unsorted (envelopes) and the exact pieces of the sorted ones.

    A bucket is sorted when its bound is within ``NEGLIGIBLE / c`` of the
    smallest ``||g||_K`` at the line's edges.
    """
    width = buckets.edges.shape[1]
    edges = buckets.edges.ravel()
    real = np.zeros(buckets.edges.shape, dtype=bool)
    real[:, :-1] = buckets.edges[:, 1:] > buckets.edges[:, :-1]
    sort = real & (buckets.bound <= buckets.least[:, None] + SORTED / target.c)
    index = np.flatnonzero(real & ~sort)
    unsorted = _Items(
        index // width,
        edges[index],
        edges[index + 1] - edges[index],
        buckets.bound.ravel()[index],
        np.zeros(index.size, dtype=bool),
    )
    return _Items.join(tails, unsorted, _exact_pieces(target, window, buckets, sort.ravel()))


def _exact_pieces(target: QuantileTarget, window: _WindowCuts, buckets: _Buckets, sort: np.ndarray) -> _Items:
    """The exact pieces of the buckets marked in ``sort`` (flattened): their cuts sorted, the moves cumulated from
    each bucket's first edge.

    A sorted bucket gives the piece from its first edge to its first cut (g is
    ``g`` at that edge there) and one from each cut to the next or to its last edge.
    """
    keep = np.flatnonzero(sort[buckets.at])
    order = keep[_by_line_and_value(window.line[keep], window.value[keep], buckets.edges.shape[0])]
    at, value = buckets.at[order], window.value[order]
    moves = np.take(target.XT, window.row[order], axis=1)
    moves *= window.sign[order] * target.weight[window.row[order]]
    running = np.cumsum(moves, axis=1)
    first = np.ones(at.size, dtype=bool)
    first[1:] = at[1:] != at[:-1]
    starts = np.flatnonzero(first)
    edge_g = buckets.g.reshape(-1, moves.shape[0])
    base = np.take(edge_g, at[starts], axis=0) - (running[:, starts] - moves[:, starts]).T
    g = running.T + np.repeat(base, np.diff(np.append(starts, at.size)), axis=0)
    edges = buckets.edges.ravel()
    end = np.where(np.append(first[1:], True), edges[at + 1], np.append(value[1:], 0.0))
    heads = np.flatnonzero(sort)
    head_end = edges[heads + 1]
    head_end[np.searchsorted(heads, at[starts])] = value[starts]
    width = buckets.edges.shape[1]
    return _Items(
        np.concatenate([heads // width, at // width]),
        np.concatenate([edges[heads], value]),
        np.concatenate([head_end - edges[heads], end - value]),
        np.concatenate([k_norm(edge_g[heads], target.norm), k_norm(g, target.norm)]),
        np.ones(heads.size + at.size, dtype=bool),
    )


def _by_line_and_value(line: np.ndarray, value: np.ndarray, lines: int) -> np.ndarray:
    """The order of entries grouped by ``line`` (nondecreasing) that sorts each line's values: one row of a
    padded array per line, sorted row by row (fast for many short lines as for a few long ones)."""
    counts = np.bincount(line, minlength=lines)
    starts = np.cumsum(counts) - counts
    rows = np.full((lines, counts.max(initial=0)), np.inf)
    rows[line, np.arange(line.size) - starts[line]] = value
    order = np.argsort(rows, axis=1) + starts[:, None]
    return order[np.arange(rows.shape[1])[None, :] < counts[:, None]]


def _gumbel_max(rng: np.random.Generator, group: np.ndarray, log_mass: np.ndarray, groups: int) -> np.ndarray:
    """For each of ``groups`` groups, the index of one of its items (``group``: the item's group), drawn with
    probability proportional to ``exp(log_mass)`` (Gumbel-max; 0 for a group with no items)."""
    scores = log_mass + noise.gumbel(rng, log_mass.shape)
    best = np.full(groups, -np.inf)
    np.maximum.at(best, group, scores)
    top = np.flatnonzero(scores == best[group])
    pick = np.zeros(groups, dtype=np.intp)
    pick[group[top]] = top
    return pick


def _draw_items(
    rng: np.random.Generator, target: QuantileTarget, r: np.ndarray, a: np.ndarray, items: _Items
) -> np.ndarray:
    """Rejection from the exact pieces and the envelopes ``e^(-c bound)``: an exact draw per line.

    An item is chosen by Gumbel-max over the log masses ``log(length) - c bound``,
    t uniformly in it; a t in an envelope is accepted with probability
    ``e^(-c (||g(t)||_K - bound))`` (g(t) computed exactly), a rejected line draws again.
    """
    c, k = target.c, r.shape[0]
    with np.errstate(divide="ignore"):
        log_mass = np.log(np.maximum(items.length, 0.0)) - c * items.bound
    t = np.empty(k)
    pending = np.ones(k, dtype=bool)
    while pending.any():
        candidates = np.flatnonzero(pending[items.line])
        lines = np.flatnonzero(pending)
        pick = candidates[_gumbel_max(rng, items.line[candidates], log_mass[candidates], k)[lines]]
        proposal = items.start[pick] + noise.uniform(rng, 0.0, 1.0, pick.size) * np.maximum(items.length[pick], 0.0)
        accept = items.exact[pick] | ~np.isfinite(log_mass[pick])
        check = np.flatnonzero(~accept)
        if check.size:
            g = target.gradient_on_line(r[lines[check]], a[lines[check]], proposal[check])
            log_ratio = -c * (k_norm(g, target.norm) - items.bound[pick[check]])
            accept[check] = np.log(noise.uniform(rng, 0.0, 1.0, check.size)) < log_ratio
        t[lines[accept]] = proposal[accept]
        pending[lines[accept]] = False
    return t
