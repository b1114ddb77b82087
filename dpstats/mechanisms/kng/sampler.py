"""Sampling the K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.1).

The target is ``pi_D(theta) ~ exp(-c ||g(theta; D)||_K)`` on the domain
``Theta = {||theta||_1 <= B}`` of the scaled problem, with ``c = eps / (2 Delta)``
and ``g`` the gradient of the loss:

* least squares (section 4.2): ``g(theta) = 2 (S theta - s)`` with ``S = X'X``,
  ``s = X'y``, computed in one pass over the data, so that every evaluation
  along the chain costs O(d^2) (:class:`LeastSquaresTarget`);
* quantile regression (section 4.5): ``g(theta) = sum_i x_i (1{y_i <= x_i'theta} - tau)``,
  piecewise constant on the cells of the arrangement of the n hyperplanes
  ``y_i = x_i'theta`` (:class:`QuantileTarget`).

The samplers depend on the data only through the target density: chains start
at ``theta = 0`` (the centre of Theta, public), their number of sweeps is
fixed before the data are read, every sweep runs at the target's own c, and
no move has a step size:

* in one dimension the single line is the whole domain: one line draw (below)
  is an exact draw;
* least squares, d >= 2 (:func:`sample_least_squares`): exact rejection from the
  untruncated density ``~ exp(-c ||A_lam theta - 2 s||_K)``, drawn as
  ``A_lam^{-1} (z + 2 s)`` with z from the K-norm distribution (Hardt & Talwar
  2010: radius Gamma(d + 1, 1/c) times a uniform point of the unit K-ball) and
  ``A_lam = 2 S + lam I`` (:func:`exact_least_squares`); only if every proposal
  is rejected, the chain below with an independence Metropolis-Hastings move
  from the same proposal (:func:`independence_step`);
* quantile regression, d >= 2 (:func:`run_chains`): an ensemble of chains, each
  sweep moving every walker by hit-and-run (a direction uniform on the
  sphere) and by ensemble differential directions (:func:`half_sweep`).

Every line move takes the chord of Theta through the current point (exact,
:func:`l1_ball_chord`) and draws from the *exact* conditional density on it.
On a line the quantile gradient is piecewise constant (n breakpoints): the
conditional is drawn exactly with only the breakpoints of a window around the
current point looked at, counted into buckets whose sums give g exactly at
their edges and bound it inside, only the buckets that can hold mass sorted
into exact pieces, and the other buckets and the tails beyond the window
drawn by rejection from their bounds (:meth:`QuantileTarget.sample_line`).
A chain's next move starts from the residuals and gradient its last move
left (:class:`_Walkers`), not from a product with the data.
The least-squares ``||a + t b||_K`` is piecewise linear for l1 and linf, so the
conditional is piecewise log-linear and is sampled exactly
(:func:`sample_piecewise_exponential`: Gumbel-max over the pieces, then an
inverse CDF). For least squares with l2 the conditional is log-concave and is
drawn by rejection from a tangent envelope, at most :data:`L2_TRIES` tries,
staying put if all fail (a mixture of the exact conditional and the identity:
still reversible). A move with an exact line conditional leaves pi_D
invariant.

Everything runs on ``chains`` independent chains at once (rows of ``theta``),
so that the goodness-of-fit tests can draw 10^5 outputs quickly; a fit uses one.
Every random number comes from dpstats/privacy/noise.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ...privacy import noise

NORMS = ("linf", "l2", "l1")
#: Proposals per chain of the exact least-squares sampler before it falls back to the chain.
EXACT_TRIES = 4096
#: Proposals drawn at once by the exact least-squares sampler.
EXACT_BATCH = 64
#: ``c lam B`` of the regularised least-squares proposal: it costs a factor e^-KAPPA in acceptance.
KAPPA = 0.25
#: Rejection tries per l2 least-squares line update before the chain stays put.
L2_TRIES = 32
#: Tangent offsets (in units of 1/c above the minimum) of the l2 envelope.
_L2_OFFSETS = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
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
#: The dual of each K-norm: ``|u'g| <= ||u||_K* ||g||_K``.
DUAL_NORM = {"linf": "l1", "l2": "l2", "l1": "linf"}


def k_norm(G: np.ndarray, norm: str) -> np.ndarray:
    """``||G||_K`` along the last axis, for K in :data:`NORMS` (a loop over the few coordinates is fastest)."""
    G = np.asarray(G, dtype=float)
    if G.shape[-1] == 0:
        return np.zeros(G.shape[:-1])
    if norm == "l2":
        out = G[..., 0] ** 2
        for j in range(1, G.shape[-1]):
            out = out + G[..., j] ** 2
        return np.sqrt(out)
    out = np.abs(G[..., 0])
    for j in range(1, G.shape[-1]):
        out = np.maximum(out, np.abs(G[..., j])) if norm == "linf" else out + np.abs(G[..., j])
    return out


# --------------------------------------------------------------------------
# Exact one-dimensional pieces
# --------------------------------------------------------------------------


def _log_phi(x: np.ndarray) -> np.ndarray:
    """``log((e^x - 1) / x)`` (0 at x = 0), stable for every x."""
    ax = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.maximum(x, 0.0) + np.log(-np.expm1(-ax)) - np.log(ax)
    return np.where(ax > 0, out, 0.0)


def _exponential_fraction(U: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Inverse CDF on [0, 1] of the density ``~ e^(x s)``, at uniforms ``U`` (stable)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        neg = np.log1p(U * np.expm1(x)) / x
        pos = 1.0 + np.log1p((1.0 - U) * np.expm1(-x)) / x
    out = np.where(x < 0, neg, np.where(x > 0, pos, U))
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def sample_piecewise_exponential(
    rng: np.random.Generator, edges: np.ndarray, left: np.ndarray, slope: np.ndarray
) -> np.ndarray:
    """One exact draw per row from a piecewise log-linear density.

    Row r has pieces ``[edges[r, j], edges[r, j + 1]]`` on which the log density
    (up to a constant) is ``left[r, j] + slope[r, j] (t - edges[r, j])``. Piece j
    is chosen with probability proportional to its mass (Gumbel-max in log
    space, so no underflow at any eps), then t by the piece's inverse CDF.
    """
    lengths = np.diff(edges, axis=1)
    x = slope * lengths
    with np.errstate(divide="ignore"):
        log_mass = left + np.log(np.maximum(lengths, 0.0)) + _log_phi(x)
    log_mass = np.where(lengths > 0, log_mass, -np.inf)
    pick = np.argmax(log_mass + noise.gumbel(rng, log_mass.shape), axis=1)[:, None]
    start = np.take_along_axis(edges[:, :-1], pick, 1)[:, 0]
    length = np.take_along_axis(lengths, pick, 1)[:, 0]
    frac = _exponential_fraction(noise.uniform(rng, 0.0, 1.0, start.shape), np.take_along_axis(x, pick, 1)[:, 0])
    return start + frac * np.maximum(length, 0.0)


def _pieces_from_values(edges: np.ndarray, h: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Log density ``-c h`` linear between ``edges``: (left values, slopes)."""
    lengths = np.diff(edges, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(lengths > 0, -c * np.diff(h, axis=1) / lengths, 0.0)
    return -c * h[:, :-1], slope


def _sorted_edges(t_lo: np.ndarray, t_hi: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``[t_lo, sorted candidates clipped to the chord, t_hi]`` per row (NaN -> t_lo)."""
    lo, hi = t_lo[:, None], t_hi[:, None]
    inner = np.clip(np.where(np.isfinite(candidates), candidates, lo), lo, hi)
    return np.concatenate([lo, np.sort(inner, axis=1), hi], axis=1)


# --------------------------------------------------------------------------
# The domain: chords of the l1 ball
# --------------------------------------------------------------------------


def _l1_exit(theta: np.ndarray, u: np.ndarray, B: float) -> np.ndarray:
    """Largest ``t >= 0`` with ``||theta + t u||_1 <= B`` (theta inside), exactly.

    ``h(t) = ||theta + t u||_1`` is convex and piecewise linear; its slope grows
    by ``2 |u_j|`` at each positive root ``-theta_j / u_j``. The exit lies on the
    last piece whose start still has ``h <= B``.
    """
    k, d = theta.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = -theta / u
    roots = np.where((u != 0) & (roots > 0), roots, np.inf)
    order = np.argsort(roots, axis=1)
    knots = np.take_along_axis(roots, order, 1)
    steps = np.take_along_axis(2.0 * np.abs(u), order, 1)
    slope0 = (np.where(theta != 0, np.sign(theta), np.sign(u)) * u).sum(axis=1)
    starts = np.concatenate([np.zeros((k, 1)), knots], axis=1)
    slopes = slope0[:, None] + np.concatenate([np.zeros((k, 1)), np.cumsum(steps, axis=1)], axis=1)
    finite = np.isfinite(starts)
    with np.errstate(invalid="ignore"):
        seg = np.where(np.isfinite(knots), knots - starts[:, :-1], 0.0)
    h0 = np.minimum(np.abs(theta).sum(axis=1), B)
    h_start = h0[:, None] + np.concatenate([np.zeros((k, 1)), np.cumsum(slopes[:, :-1] * seg, axis=1)], axis=1)
    inside = finite & (h_start <= B)
    last = d - np.argmax(inside[:, ::-1], axis=1)
    row = np.arange(k)
    s, hs, sl = starts[row, last], h_start[row, last], slopes[row, last]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = s + np.where(sl > 0, (B - hs) / sl, 0.0)
    end = np.concatenate([knots, np.full((k, 1), np.inf)], axis=1)[row, last]
    return np.clip(np.nan_to_num(t, nan=0.0, posinf=0.0), 0.0, end)


def l1_ball_chord(theta: np.ndarray, u: np.ndarray, B: float) -> tuple[np.ndarray, np.ndarray]:
    """``(t_lo, t_hi)``: the chord ``{theta + t u}`` of the l1 ball of radius B, per row."""
    both = _l1_exit(np.concatenate([theta, theta]), np.concatenate([-u, u]), B)
    return -both[: theta.shape[0]], both[theta.shape[0] :]


def into_ball(theta: np.ndarray, B: float) -> np.ndarray:
    """Rows pulled back onto the l1 ball where rounding left them a hair outside."""
    norms = np.abs(theta).sum(axis=1, keepdims=True)
    return np.where(norms > B, theta * (B / np.maximum(norms, B)), theta)


# --------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LeastSquaresTarget:
    """``g(theta) = 2 (S theta - s)`` (section 4.2), from ``S = X'X`` and ``s = X'y``."""

    S: np.ndarray
    s: np.ndarray
    c: float
    norm: str

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Gradients at the rows of ``theta``."""
        return 2.0 * (theta @ self.S - self.s)

    def utility(self, theta: np.ndarray) -> np.ndarray:
        """``||g(theta)||_K`` at the rows of ``theta`` (the exponent is ``-c`` times it)."""
        return k_norm(self.gradient(theta), self.norm)

    def sample_line(
        self, rng: np.random.Generator, theta: np.ndarray, u: np.ndarray, t_lo: np.ndarray, t_hi: np.ndarray
    ) -> np.ndarray:
        """A draw of t from the conditional density on each chord (exact for l1 and linf)."""
        a, b = self.gradient(theta), 2.0 * (u @ self.S)
        if self.norm == "l2":
            return _l2_line(rng, self.c, a, b, t_lo, t_hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            candidates = [-a / b]
            if self.norm == "linf":
                j, k = np.triu_indices(a.shape[1], 1)
                candidates += [(a[:, k] - a[:, j]) / (b[:, j] - b[:, k]), -(a[:, j] + a[:, k]) / (b[:, j] + b[:, k])]
        edges = _sorted_edges(t_lo, t_hi, np.concatenate(candidates, axis=1))
        h = k_norm(a[:, None, :] + edges[:, :, None] * b[:, None, :], self.norm)
        return sample_piecewise_exponential(rng, edges, *_pieces_from_values(edges, h, self.c))


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
    """``g(theta) = sum_i x_i (1{y_i <= x_i'theta} - tau)`` (section 4.5).

    Identical rows (x and y) cross the fit together, so g is kept as a sum over
    the distinct rows, each with its multiplicity: the same function of theta
    with fewer rows to pass over (discrete data have many ties).
    """

    X: np.ndarray
    y: np.ndarray
    tau: float
    c: float
    norm: str
    #: The distinct rows of X, transposed and stored row-major, so that the products with it are contiguous
    #: passes. They are ``np.einsum`` loops, not BLAS: with a dimension of size d, a threaded BLAS on a busy
    #: machine is slower than the loop by orders of magnitude (8 ms against 0.3 ms for 6 lines at n = 10^5).
    XT: np.ndarray = field(init=False, repr=False, compare=False)
    #: The distinct rows' responses and how many rows each stands for.
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
        rows, weight = _distinct_rows(np.column_stack([self.X, self.y]).astype(float))
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


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``rows`` (sorted) and how many times each occurs."""
    ordered = rows[np.lexsort(rows.T[::-1])]
    new = np.ones(len(ordered), dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    starts = np.flatnonzero(new)
    return ordered[starts], np.diff(np.append(starts, len(ordered)))


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


Target = LeastSquaresTarget | QuantileTarget


def _l2_line(
    rng: np.random.Generator, c: float, a: np.ndarray, b: np.ndarray, t_lo: np.ndarray, t_hi: np.ndarray
) -> np.ndarray:
    """Rejection from a tangent envelope of ``h(t) = ||a + t b||_2`` (convex), at most :data:`L2_TRIES` tries.

    Tangents of h at its minimiser t* and where ``h = h* + m / c``
    (m in :data:`_L2_OFFSETS`) bound h from below, so ``exp(-c max tangents)``
    bounds the density from above and is piecewise log-linear. The envelope
    depends on the line only (not on where the chain sits on it), so the rows
    that never accept stay put with a probability that is a function of the
    line: the update is a mixture of the exact conditional and the identity.
    """
    alpha, beta, gamma = (b * b).sum(axis=1), (a * b).sum(axis=1), (a * a).sum(axis=1)
    safe = np.where(alpha > 0, alpha, 1.0)
    t_star = np.where(alpha > 0, -beta / safe, 0.0)
    h_star = np.sqrt(np.maximum(gamma - np.where(alpha > 0, beta**2 / safe, 0.0), 0.0))
    level = h_star[:, None] + _L2_OFFSETS[None, :] / c
    width = np.where(alpha[:, None] > 0, np.sqrt(np.maximum(level**2 - h_star[:, None] ** 2, 0.0) / safe[:, None]), 0.0)
    points = np.concatenate([t_star[:, None] - width[:, ::-1], t_star[:, None], t_star[:, None] + width], axis=1)

    def h_at(t: np.ndarray, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
        quadratic = alpha[rows, None] * t**2 + 2 * beta[rows, None] * t + gamma[rows, None]
        return np.sqrt(np.maximum(quadratic, 0.0))

    values = h_at(points)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.where(values > 0, (alpha[:, None] * points + beta[:, None]) / values, 0.0)
        cuts = (values[:, 1:] - values[:, :-1] + slopes[:, :-1] * points[:, :-1] - slopes[:, 1:] * points[:, 1:]) / (
            slopes[:, :-1] - slopes[:, 1:]
        )
    edges = _sorted_edges(t_lo, t_hi, cuts)

    def lower(t: np.ndarray, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
        tangents = values[rows, None, :] + slopes[rows, None, :] * (t[:, :, None] - points[rows, None, :])
        return tangents.max(axis=2)

    left, slope = _pieces_from_values(edges, lower(edges), c)
    t = np.zeros_like(t_lo)
    todo = np.ones(t_lo.shape, dtype=bool)
    for _ in range(L2_TRIES):
        rows = np.flatnonzero(todo)
        if rows.size == 0:
            break
        proposal = sample_piecewise_exponential(rng, edges[rows], left[rows], slope[rows])
        gap = h_at(proposal[:, None], rows)[:, 0] - lower(proposal[:, None], rows)[:, 0]
        accept = noise.uniform(rng, 0.0, 1.0, rows.size) < np.exp(-c * np.maximum(gap, 0.0))
        t[rows[accept]] = proposal[accept]
        todo[rows[accept]] = False
    return t


# --------------------------------------------------------------------------
# Moves
# --------------------------------------------------------------------------


def uniform_directions(rng: np.random.Generator, chains: int, d: int) -> np.ndarray:
    """Directions uniform on the unit sphere of R^d (normalised Gaussians)."""
    while True:
        u = noise.gaussian(rng, 1.0, (chains, d))
        norms = np.sqrt((u * u).sum(axis=1, keepdims=True))
        if np.all(norms > 0):
            return u / norms


def line_move(rng: np.random.Generator, target: Target, theta: np.ndarray, u: np.ndarray, B: float) -> np.ndarray:
    """Move each row along its unit direction ``u`` by an exact draw from the chord's conditional density."""
    t_lo, t_hi = l1_ball_chord(theta, u, B)
    t = target.sample_line(rng, theta, u, t_lo, t_hi)
    return into_ball(theta + t[:, None] * u, B)


def hit_and_run_step(rng: np.random.Generator, target: Target, theta: np.ndarray, B: float) -> np.ndarray:
    """One hit-and-run move: a direction uniform on the sphere, then :func:`line_move`."""
    return line_move(rng, target, theta, uniform_directions(rng, theta.shape[0], theta.shape[1]), B)


def ensemble_directions(rng: np.random.Generator, group: np.ndarray, m: int) -> np.ndarray:
    """``m`` unit directions per replica, each ``theta_j - theta_k`` for an ordered pair of walkers of ``group``.

    ``group`` has shape (replicas, k, d), k >= 3 walkers; the pair is uniform
    over the ordered pairs of distinct walkers (an isotropic direction if they
    coincide): a symmetric distribution that does not depend on the walkers it
    moves (the "differential" directions of ensemble samplers: they follow the
    target's elongation, with no tuning). Returns shape (replicas, m, d).
    """
    replicas, k, d = group.shape
    first = np.minimum((noise.uniform(rng, 0.0, 1.0, (replicas, m)) * k).astype(int), k - 1)
    shift = 1 + np.minimum((noise.uniform(rng, 0.0, 1.0, (replicas, m)) * (k - 1)).astype(int), k - 2)
    u = np.take_along_axis(group, first[..., None], 1) - np.take_along_axis(group, ((first + shift) % k)[..., None], 1)
    u = u.reshape(-1, d)
    norms = np.sqrt((u * u).sum(axis=1, keepdims=True))
    u = np.where(norms > 0, u / np.where(norms > 0, norms, 1.0), uniform_directions(rng, u.shape[0], d))
    return u.reshape(replicas, m, d)


def half_sweep(
    rng: np.random.Generator, target: Target, walkers: np.ndarray, B: float, mine: np.ndarray, other: np.ndarray
) -> np.ndarray:
    """One line move of every walker: ``mine`` along differences of walkers of ``other``, ``other`` isotropically.

    ``walkers`` has shape (replicas, W, d). The directions of ``mine``
    (:func:`ensemble_directions`) depend on ``other`` only, so the move of
    ``mine`` leaves the product of KNG densities invariant given ``other``; the
    hit-and-run moves of ``other`` (directions uniform on the sphere) do not
    look at ``mine``, so making them in the same batch is making them after
    it. All the lines are drawn in one call of the target's line sampler.
    """
    replicas, W, d = walkers.shape
    u = np.empty_like(walkers)
    u[:, mine] = ensemble_directions(rng, walkers[:, other], mine.size)
    u[:, other] = uniform_directions(rng, replicas * other.size, d).reshape(replicas, other.size, d)
    return line_move(rng, target, walkers.reshape(-1, d), u.reshape(-1, d), B).reshape(replicas, W, d)


def ensemble_size(d: int) -> int:
    """Walkers per ensemble: ``max(6, 2 (d + 1))`` (two groups of at least three)."""
    return max(6, 2 * (d + 1))


def k_norm_draws(rng: np.random.Generator, c: float, d: int, norm: str, chains: int) -> np.ndarray:
    """Draws from the density ``~ exp(-c ||z||_K)`` on R^d (Hardt & Talwar 2010).

    Radius Gamma(d + 1, 1/c) times a point uniform in the unit K-ball: a cube
    (linf), a normalised Gaussian times U^(1/d) (l2), or exponential spacings
    with random signs (l1: ``E_j / sum_{i <= d+1} E_i`` is uniform on the simplex).
    """
    radius = noise.gamma(rng, d + 1.0, 1.0 / c, (chains, 1))
    if norm == "linf":
        ball = noise.uniform(rng, -1.0, 1.0, (chains, d))
    elif norm == "l2":
        ball = uniform_directions(rng, chains, d) * noise.uniform(rng, 0.0, 1.0, (chains, 1)) ** (1.0 / d)
    else:
        spacings = noise.gamma(rng, 1.0, 1.0, (chains, d + 1))
        signs = np.where(noise.uniform(rng, 0.0, 1.0, (chains, d)) < 0.5, -1.0, 1.0)
        ball = signs * spacings[:, :d] / spacings.sum(axis=1, keepdims=True)
    return radius * ball


def independence_step(
    rng: np.random.Generator, target: LeastSquaresTarget, theta: np.ndarray, B: float, lam: float
) -> np.ndarray:
    """Independence Metropolis-Hastings from the untruncated K-norm density (module docstring).

    Proposal ``theta' = A_lam^{-1} (z + 2 s)``, density ``~ exp(-c ||A_lam theta' - 2 s||_K)``
    on R^d; target ``~ exp(-c ||2 S theta' - 2 s||_K)`` on Theta. The acceptance
    ratio is ``1{theta' in Theta} exp(c (q(theta') - q(theta)) - c (u(theta') - u(theta)))``
    with u the target's and q the proposal's norm; at ``lam = 0`` it is the indicator.
    """
    chains, d = theta.shape
    A = 2.0 * target.S
    A_lam, b = A + lam * np.eye(d), 2.0 * target.s
    z = k_norm_draws(rng, target.c, d, target.norm, chains)
    proposal = np.linalg.solve(A_lam, (z + b).T).T
    c, norm = target.c, target.norm

    def log_ratio_part(point: np.ndarray) -> np.ndarray:
        return c * (k_norm(point @ A_lam - b, norm) - k_norm(point @ A - b, norm))

    with np.errstate(over="ignore", invalid="ignore"):
        log_ratio = log_ratio_part(proposal) - log_ratio_part(theta)
    inside = np.abs(proposal).sum(axis=1) <= B
    log_u = np.log(noise.uniform(rng, 0.0, 1.0, chains))
    accept = inside & (log_u < np.nan_to_num(log_ratio, nan=-np.inf))
    return np.where(accept[:, None], proposal, theta)


def exact_least_squares(
    rng: np.random.Generator, target: LeastSquaresTarget, B: float, chains: int, tries: int = EXACT_TRIES
) -> tuple[np.ndarray, np.ndarray]:
    """Exact draws by rejection from the regularised untruncated K-norm density.

    Proposal ``theta' = A_lam^{-1} (z + 2 s)`` with z from ``~ exp(-c ||z||_K)``
    (:func:`k_norm_draws`) and ``A_lam = 2 S + lam I``, ``lam = KAPPA / (c B)``:
    its unnormalised density is ``exp(-c ||z||_K)``. On Theta,
    ``||2 S theta' - 2 s||_K = ||z - lam theta'||_K >= ||z||_K - lam B``
    (``||.||_K <= ||.||_1`` for the three norms), so target / proposal
    ``<= e^{KAPPA}`` and accepting with probability
    ``1{theta' in Theta} exp(-c ||2 S theta' - 2 s||_K + c ||z||_K - KAPPA)``
    is rejection sampling: an accepted draw has exactly the KNG density. The
    ridge keeps the proposal proper when S is singular (a declared level no
    row has) at a fixed cost of ``e^{-KAPPA}`` in acceptance.

    At most ``tries`` proposals per chain, drawn in batches; returns the draws
    and a mask of the chains that accepted one (the others hold zeros).
    """
    d = target.S.shape[0]
    A = 2.0 * target.S
    lam = KAPPA / (target.c * B)
    chol = np.linalg.cholesky(A + lam * np.eye(d))
    b = 2.0 * target.s
    theta, done = np.zeros((chains, d)), np.zeros(chains, dtype=bool)
    batch = min(EXACT_BATCH, tries)
    for _ in range(-(-tries // batch)):
        z = k_norm_draws(rng, target.c, d, target.norm, chains * batch)
        proposal = np.linalg.solve(chol.T, np.linalg.solve(chol, (z + b).T)).T
        with np.errstate(over="ignore", invalid="ignore"):
            log_accept = target.c * (k_norm(z, target.norm) - k_norm(proposal @ A - b, target.norm)) - KAPPA
        log_u = np.log(noise.uniform(rng, 0.0, 1.0, chains * batch))
        accept = (np.abs(proposal).sum(axis=1) <= B) & (log_u < np.nan_to_num(log_accept, nan=-np.inf))
        accept = accept.reshape(chains, batch)
        first = np.argmax(accept, axis=1)
        take = ~done & accept.any(axis=1)
        theta[take] = proposal.reshape(chains, batch, d)[take, first[take]]
        done |= take
        if done.all():
            break
    return theta, done


def sample_least_squares(
    rng: np.random.Generator, target: LeastSquaresTarget, B: float, sweeps: int, chains: int = 1
) -> np.ndarray:
    """Least-squares KNG draws: exact (:func:`exact_least_squares`), else the chain.

    A chain whose :data:`EXACT_TRIES` proposals were all rejected (the
    untruncated density puts little mass on Theta: a fit outside or near the
    boundary of the domain, or a nearly flat density at small n eps) is drawn
    by :func:`run_chains` with the independence proposal instead.
    """
    d = target.S.shape[0]
    if d == 1:
        return run_chains(rng, target, d, B, sweeps, chains)
    theta, done = exact_least_squares(rng, target, B, chains)
    if not done.all():
        theta[~done] = run_chains(
            rng, target, d, B, sweeps, int((~done).sum()), independence_lam=KAPPA / (target.c * B)
        )
    return theta


def run_chains(
    rng: np.random.Generator,
    target: Target,
    d: int,
    B: float,
    sweeps: int,
    chains: int = 1,
    independence_lam: float | None = None,
) -> np.ndarray:
    """``chains`` independent draws: walker 0 of an ensemble after ``sweeps`` sweeps from ``theta = 0``.

    In one dimension the single line is the domain, so one hit-and-run move
    from 0 is an exact draw (``sweeps`` is ignored). Otherwise each of
    ``chains`` independent ensembles of :func:`ensemble_size` walkers starts
    with every walker at 0, and each sweep moves every walker by an
    independence proposal (least squares, when ``independence_lam`` is given),
    then two half sweeps (:func:`half_sweep`): the first half moves along
    differences of the second while the second moves by hit-and-run, then the
    roles swap. Every move leaves the product of KNG densities invariant, so
    each walker's law tends to it.
    """
    if d == 1:
        return hit_and_run_step(rng, target, np.zeros((chains, 1)), B)
    W = ensemble_size(d)
    walkers = np.zeros((chains, W, d))
    halves = (np.arange(W // 2), np.arange(W // 2, W))
    for _ in range(sweeps):
        flat = walkers.reshape(-1, d)
        if independence_lam is not None:
            flat = independence_step(rng, target, flat, B, independence_lam)
        walkers = half_sweep(rng, target, flat.reshape(chains, W, d), B, *halves)
        walkers = half_sweep(rng, target, walkers, B, *halves[::-1])
    return walkers[:, 0]


def probe_points(d: int, B: float, pairs: int = 12) -> np.ndarray:
    """A fixed public set of points of Theta where the audits evaluate the utility.

    The centre, the 2d vertices ``+-B e_j``, the midpoints ``+-B e_j / 2`` and
    ``B (+-e_j +- e_k) / 2`` for the first ``pairs`` coordinate pairs; the
    vertices are where the least-squares sensitivity 4 (1 + B) is attained.
    """
    eye = np.eye(d)
    points = [np.zeros((1, d)), B * eye, -B * eye, B * eye / 2, -B * eye / 2]
    j, k = np.triu_indices(d, 1)
    for sj in (1.0, -1.0):
        for sk in (1.0, -1.0):
            points.append(B * (sj * eye[j[:pairs]] + sk * eye[k[:pairs]]) / 2)
    return np.concatenate(points, axis=0)
