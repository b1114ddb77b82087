"""Sampling the K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.1).

The target is ``pi_D(theta) ~ exp(-c ||g(theta; D)||_K)`` on the domain
``Theta = {||theta||_1 <= B}`` of the scaled problem, with ``c = eps / (2 Delta)``
and ``g`` the gradient of the loss:

* least squares (section 4.2): ``g(theta) = 2 (S theta - s)`` with ``S = X'X``,
  ``s = X'y``, computed in one pass over the data, so that every evaluation
  along the chain costs O(d^2) (:class:`LeastSquaresTarget`);
* quantile regression (section 4.5): ``g(theta) = sum_i x_i (1{y_i <= x_i'theta} - tau)``,
  piecewise constant on the cells of the arrangement of the n hyperplanes
  ``y_i = x_i'theta`` (:class:`~.quantile_lines.QuantileTarget`, dpstats/mechanisms/kng/quantile_lines.py).

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
drawn by rejection from their bounds (:meth:`~.quantile_lines.QuantileTarget.sample_line`).
A chain's next move starts from the residuals and gradient its last move
left (``quantile_lines._Walkers``), not from a product with the data.
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

from dataclasses import dataclass
from typing import Protocol

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


class Target(Protocol):
    """What a chain samples: :class:`LeastSquaresTarget` or quantile regression's target
    (dpstats/mechanisms/kng/quantile_lines.py), each drawing exactly on a line."""

    def sample_line(
        self, rng: np.random.Generator, theta: np.ndarray, u: np.ndarray, t_lo: np.ndarray, t_hi: np.ndarray
    ) -> np.ndarray:
        """A draw of t from the target's conditional density on each chord ``theta + t u``, t in [t_lo, t_hi]."""
        ...


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
