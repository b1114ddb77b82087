"""Goodness of fit of the KNG samplers against the numerically normalised density.

Reimherr & Awan (2019), Theorem 3.1: the release is a draw from
``pi_D(theta) ~ exp(-c ||grad l(theta; D)||_K)`` on ``||theta||_1 <= B``. Its
eps-DP is a property of that density; the sampler must deliver it
(dpstats/mechanisms/kng/sampler.py). One dimension: the draw is exact, and
it is compared with the exact CDF. Two dimensions: the density is normalised
numerically on a fine grid of the l1 ball, and the draws' projections on four
directions are compared with the grid's. Every comparison is a KS test at
alpha = 1e-6 on independent draws (20,000 or more from the exact samplers;
3,000 whole chains for the MCMC); the test's power is shown on draws at
``c x 0.7`` and ``c x 1.3`` (for the chains, on as many draws from the grid's
own density at those c: the power is the KS test's at that sample size, and a
chain run costs a minute). False-failure rate: at most 4e-6 per exact-sampler
comparison; for the MCMC the test asserts that the chain's distance from the
density is invisible at this sample size, which is the claim
``res.privacy.caveats`` makes.

Draws are made in blocks (:data:`BLOCK` rows per sampler call, one generator
carried through): the same law as one call, and several times less CPU, since
a call's temporaries of 10^5 rows fall out of the caches.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dpstats.audit.goodness_of_fit import intervals_cdf, ks_check
from dpstats.mechanisms.kng import mechanism as kng
from dpstats.mechanisms.kng import quantile_lines as kng_quantile
from dpstats.mechanisms.kng import sampler as kng_sampler

ALPHA = 1e-6
DRAWS = 20_000
#: Draws of the one-dimensional exact samplers.
ONE_D_DRAWS = 100_000
#: Rows (draws, lines or chains) per sampler call (module docstring).
BLOCK = 1_000
#: Chains are costlier than exact draws (each is a whole chain); 3,000 keep the KS test's power
#: against c x 0.7 and x 1.3 (asserted below) and the file within a minute on two cores.
CHAIN_DRAWS = 3_000
DIRECTIONS = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -1.0]])


def in_blocks(draw: Callable[[np.random.Generator, int], np.ndarray], seed: int, total: int) -> np.ndarray:
    """``total`` independent draws as ``draw(rng, rows)`` makes them, :data:`BLOCK` rows per call from one generator."""
    rng = np.random.default_rng(seed)
    return np.concatenate([draw(rng, min(BLOCK, total - start)) for start in range(0, total, BLOCK)])


def small_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """An intercept and one regressor on [-1, 1], and a response in [-1, 1]."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1, 1, n)
    v = np.clip(0.2 + 0.5 * u + 0.3 * rng.standard_normal(n), -1, 1)
    return np.column_stack([np.ones(n), u]), v


# --------------------------------------------------------------------------
# One dimension: exact
# --------------------------------------------------------------------------


def private_quantile_cdf(v: np.ndarray, tau: float, c: float, B: float):
    """Exact CDF of ``exp(-c |#{v_i <= t} - tau n|)`` on [-B, B] (Smith's private quantile)."""
    inner = np.sort(np.clip(v, -B, B))
    edges = np.concatenate([[-B], inner, [B]])
    below = np.arange(inner.size + 1)
    return intervals_cdf(edges, -c * np.abs(below - tau * v.size))


@pytest.mark.parametrize("tau", [0.5, 0.9])
def test_single_quantile_is_exact(tau: float) -> None:
    _, v = small_data(25, 1)
    B, c = 2.0, 0.8
    cdf = private_quantile_cdf(v, tau, c, B)

    def draws(factor: float, seed: int) -> np.ndarray:
        target = kng_quantile.QuantileTarget(np.ones((v.size, 1)), v, tau, c * factor, "linf")
        return in_blocks(lambda rng, m: kng_sampler.run_chains(rng, target, 1, B, 1, chains=m)[:, 0], seed, ONE_D_DRAWS)

    assert not ks_check(draws(1.0, 0), cdf, alpha=ALPHA).rejected
    for factor, seed in ((0.7, 1), (1.3, 2)):
        assert ks_check(draws(factor, seed), cdf, alpha=ALPHA).rejected, f"no power at c x {factor}"


def test_least_squares_through_the_origin_is_exact() -> None:
    """``exp(-2 c |S theta - s|)`` on [-B, B]: a Laplace law truncated to the domain."""
    X, v = small_data(40, 2)
    x = X[:, 1:]
    B, c = 1.0, 0.05
    S, s = float(x[:, 0] @ x[:, 0]), float(x[:, 0] @ v)
    law = stats.laplace(loc=s / S, scale=1.0 / (2.0 * c * S))

    def cdf(t: np.ndarray) -> np.ndarray:
        t = np.clip(t, -B, B)
        return (law.cdf(t) - law.cdf(-B)) / (law.cdf(B) - law.cdf(-B))

    def draws(factor: float, seed: int) -> np.ndarray:
        target = kng_sampler.LeastSquaresTarget(x.T @ x, x.T @ v, c * factor, "linf")
        return in_blocks(
            lambda rng, m: kng_sampler.sample_least_squares(rng, target, B, 1, chains=m)[:, 0], seed, ONE_D_DRAWS
        )

    assert not ks_check(draws(1.0, 0), cdf, alpha=ALPHA).rejected
    for factor, seed in ((0.7, 1), (1.3, 2)):
        assert ks_check(draws(factor, seed), cdf, alpha=ALPHA).rejected, f"no power at c x {factor}"


# --------------------------------------------------------------------------
# One quantile line: the conditional density that every chain move draws from
# --------------------------------------------------------------------------

LINE_ROWS = 200
#: Draws per line test: 10,000 rows of LINE_ROWS cuts each, in batches of BLOCK lines (as a chain batches them).
LINE_DRAWS = 10_000


@pytest.fixture
def windowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stride sample of 50 rows, so that lines of LINE_ROWS cuts take the windowed path."""
    monkeypatch.setattr(kng_quantile, "WINDOW_SAMPLE", 50)


def line_cdf(target: kng_quantile.QuantileTarget, theta: np.ndarray, u: np.ndarray):
    """Exact CDF of ``exp(-c ||g(theta + t u)||_K)`` on the chord, every cut sorted (section 4.5's gradient)."""
    (t_lo,), (t_hi,) = kng_sampler.l1_ball_chord(theta[None], u[None], 2.0)
    r, a = target.y - target.X @ theta, target.X @ u
    with np.errstate(divide="ignore", invalid="ignore"):
        cuts = r / a
    inside = np.flatnonzero((cuts > t_lo) & (cuts < t_hi))
    inside = inside[np.argsort(cuts[inside])]
    g_lo = target.X.T @ (r <= t_lo * a) - target.tau * target.X.sum(axis=0)
    g = g_lo + np.concatenate([np.zeros((1, theta.size)), np.cumsum(np.sign(a[inside])[:, None] * target.X[inside], 0)])
    edges = np.concatenate([[t_lo], cuts[inside], [t_hi]])
    return intervals_cdf(edges, -target.c * kng_sampler.k_norm(g, target.norm))


def count_exact_gradients(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the quantile target's exact gradient evaluations on lines, recorded as they happen."""
    checked: list[int] = []
    exact_gradient = kng_quantile.QuantileTarget.gradient_on_line

    def counting(self: kng_quantile.QuantileTarget, r: np.ndarray, a: np.ndarray, t: np.ndarray) -> np.ndarray:
        checked.append(t.size)
        return exact_gradient(self, r, a, t)

    monkeypatch.setattr(kng_quantile.QuantileTarget, "gradient_on_line", counting)
    return checked


def line_draws(target: kng_quantile.QuantileTarget, theta: np.ndarray, u: np.ndarray, seed: int) -> np.ndarray:
    """:data:`LINE_DRAWS` independent draws of t on one line (one row per draw, as a chain batches its walkers)."""
    t_lo, t_hi = kng_sampler.l1_ball_chord(theta[None], u[None], 2.0)

    def draw(rng: np.random.Generator, m: int) -> np.ndarray:
        rows = (np.repeat(theta[None], m, 0), np.repeat(u[None], m, 0), np.repeat(t_lo, m), np.repeat(t_hi, m))
        return target.sample_line(rng, *rows)

    return in_blocks(draw, seed, LINE_DRAWS)


@pytest.mark.parametrize(
    ("norm", "c", "theta", "angle"),
    [
        ("linf", 2.0, (0.2, 0.5), 0.3),  # near the mode: a window of a few dozen cuts
        ("l2", 0.05, (0.2, 0.5), 1.2),  # flat: the window grows to the chord
        ("l1", 1e6, (0.2, 0.5), 2.0),  # a point mass on the best piece
        ("linf", 2.0, (-0.6, -0.9), 0.8),  # far from the mode: the window need not hold t = 0
    ],
)
def test_quantile_line_draw_is_exact(windowed: None, norm: str, c: float, theta: tuple, angle: float) -> None:
    X, v = small_data(LINE_ROWS, 6)
    target = kng_quantile.QuantileTarget(X, v, 0.5, c, norm)
    theta_, u = np.array(theta), np.array([np.cos(angle), np.sin(angle)])
    assert not ks_check(line_draws(target, theta_, u, 0), line_cdf(target, theta_, u)).rejected


def test_quantile_line_draw_is_exact_with_repeated_rows(windowed: None) -> None:
    """Rows repeated 1 to 3 times (the target keeps each distinct row once, with its multiplicity): the line draw
    still has the exact CDF of the density over all the rows."""
    X, v = small_data(LINE_ROWS // 2, 13)
    repeats = np.random.default_rng(13).integers(1, 4, v.size)
    X, v = np.repeat(X, repeats, axis=0), np.repeat(v, repeats)
    target = kng_quantile.QuantileTarget(X, v, 0.5, 1.0, "linf")
    assert target.v.size == LINE_ROWS // 2 and target.weight.sum() == v.size
    theta, u = np.array([0.2, 0.5]), np.array([np.cos(0.4), np.sin(0.4)])
    np.testing.assert_allclose(target.gradient(theta[None])[0], (v <= X @ theta) @ X - 0.5 * X.sum(axis=0))
    assert not ks_check(line_draws(target, theta, u, 0), line_cdf(target, theta, u)).rejected


def test_quantile_line_tails_are_drawn_exactly(windowed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A window forced to hold the middle third of the mass: most draws go through the tails' rejection step."""
    X, v = small_data(LINE_ROWS, 7)
    target = kng_quantile.QuantileTarget(X, v, 0.5, 0.05, "linf")
    theta, u = np.array([0.2, 0.5]), np.array([np.cos(0.5), np.sin(0.5)])
    cdf = line_cdf(target, theta, u)
    grid = np.linspace(*np.concatenate(kng_sampler.l1_ball_chord(theta[None], u[None], 2.0)), 100_001)
    window = np.interp([1 / 3, 2 / 3], cdf(grid), grid)
    monkeypatch.setattr(kng_quantile, "NEGLIGIBLE", -np.inf)  # never widen the window
    monkeypatch.setattr(kng_quantile, "_sampled_window", lambda a, *args: tuple(np.full(a.shape[0], w) for w in window))
    checked = count_exact_gradients(monkeypatch)
    assert not ks_check(line_draws(target, theta, u, 0), cdf).rejected
    assert sum(checked) > LINE_DRAWS / 2
    for factor, seed in ((0.7, 1), (1.3, 2)):
        assert ks_check(line_draws(replace(target, c=0.05 * factor), theta, u, seed), cdf).rejected, (
            f"no power x{factor}"
        )


def test_quantile_line_unsorted_buckets_are_drawn_exactly(windowed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """No bucket sorted into exact pieces: every draw inside the window goes through the buckets' rejection step."""
    X, v = small_data(LINE_ROWS, 8)
    target = kng_quantile.QuantileTarget(X, v, 0.5, 0.5, "linf")
    theta, u = np.array([0.2, 0.5]), np.array([np.cos(1.0), np.sin(1.0)])
    cdf = line_cdf(target, theta, u)
    monkeypatch.setattr(kng_quantile, "SORTED", -np.inf)
    monkeypatch.setattr(kng_quantile, "BUCKET_CUTS", 4)
    checked = count_exact_gradients(monkeypatch)
    assert not ks_check(line_draws(target, theta, u, 0), cdf).rejected
    assert sum(checked) >= LINE_DRAWS
    for factor, seed in ((0.7, 1), (1.3, 2)):
        assert ks_check(line_draws(replace(target, c=0.5 * factor), theta, u, seed), cdf).rejected, (
            f"no power x{factor}"
        )


@pytest.mark.parametrize("norm", ["linf", "l2", "l1"])
def test_quantile_line_buckets_hold_their_cuts_and_bound_g(norm: str) -> None:
    """The bookkeeping behind the exact draw, on whole windows of 40 lines: each cut lies in its bucket
    ``(edges[j], edges[j + 1]]``, g at every edge is g computed from all the rows, and every bucket's bound
    is at most ``||g||_K`` at points drawn inside it."""
    X, v = small_data(LINE_ROWS, 9)
    target = kng_quantile.QuantileTarget(X, v, 0.5, 2.0, norm)
    rng = np.random.default_rng(9)
    theta = rng.uniform(-0.5, 0.5, (40, 2))
    u = kng_sampler.uniform_directions(rng, 40, 2)
    t_lo, t_hi = kng_sampler.l1_ball_chord(theta, u, 2.0)
    t_a, t_b = t_lo * rng.uniform(0.0, 1.0, 40), t_hi * rng.uniform(0.0, 1.0, 40)
    t_a[0] = 0.0  # a window that starts at the current point
    walkers = target._walkers(theta)
    a, cuts, mask = target._lines(walkers.r, u)
    window = kng_quantile._window_cuts(a, cuts, mask, t_a, t_b)
    buckets = kng_quantile._buckets(target, window, walkers.g, t_a, t_b)
    edges = buckets.edges.ravel()
    assert np.all((edges[buckets.at] < window.value) & (window.value <= edges[buckets.at + 1]))
    line = np.repeat(np.arange(40), buckets.edges.shape[1])
    inner = (edges > np.repeat(t_a, buckets.edges.shape[1])) & (edges < np.repeat(t_b, buckets.edges.shape[1]))
    just_right = np.nextafter(edges[inner], np.inf)
    g = target.gradient_on_line(walkers.r[line[inner]], a[line[inner]], just_right)
    np.testing.assert_allclose(buckets.g.reshape(-1, 2)[inner], g, atol=1e-9)
    lengths = np.diff(buckets.edges, axis=1)
    index = np.flatnonzero(lengths.ravel() > 0)
    bucket_line, j = np.divmod(index, lengths.shape[1])
    t = buckets.edges[bucket_line, j] + rng.uniform(0.0, 1.0, index.size) * lengths.ravel()[index]
    norms = kng_sampler.k_norm(target.gradient_on_line(walkers.r[bucket_line], a[bucket_line], t), norm)
    assert np.all(buckets.bound[bucket_line, j] <= norms + 1e-9)


def test_bucket_of_is_exact_on_and_beside_the_edges() -> None:
    """Cuts on every edge of the grid and one float either side land in the bucket ``(edges[j], edges[j + 1]]``
    of their own line, where the grid's arithmetic alone would round some into the next one."""
    rng = np.random.default_rng(11)
    t_a, t_b = -rng.uniform(0.0, 1.0, 6), rng.uniform(0.0, 1.0, 6)
    t_a[0], t_b[1] = 0.0, 0.0  # windows that start or end at the current point
    edges, step, left = kng_quantile._bucket_grid(np.repeat(np.arange(6), 100), t_a, t_b)
    values = np.stack([np.nextafter(edges, -np.inf), edges, np.nextafter(edges, np.inf)], axis=-1)
    lines = np.broadcast_to(np.arange(6)[:, None, None], values.shape)
    inside = (values > t_a[:, None, None]) & (values < t_b[:, None, None])
    ones = np.ones(np.count_nonzero(inside))
    window = kng_quantile._WindowCuts(lines[inside], np.zeros(ones.size, dtype=np.intp), values[inside], ones)
    at = kng_quantile._bucket_of(window, edges, step, left)
    flat = edges.ravel()
    assert np.all((flat[at] < window.value) & (window.value <= flat[at + 1]))
    np.testing.assert_array_equal(at // edges.shape[1], window.line)


def test_window_without_cuts_has_g_at_zero_everywhere() -> None:
    """Windows that hold no cut (here of length 0 and of one empty stretch): g is g at 0 at every edge."""
    X, v = small_data(LINE_ROWS, 12)
    target = kng_quantile.QuantileTarget(X, v, 0.5, 2.0, "linf")
    g_0 = np.array([[3.0, -1.0], [0.5, 2.0]])
    window = kng_quantile._WindowCuts(*(np.zeros(0, dtype=np.intp),) * 2, np.zeros(0), np.zeros(0))
    buckets = kng_quantile._buckets(target, window, g_0, np.array([0.0, -0.1]), np.array([0.0, 0.2]))
    np.testing.assert_array_equal(buckets.g, np.broadcast_to(g_0[:, None, :], buckets.g.shape))


def test_quantile_chain_keeps_its_walkers_exactly() -> None:
    """After a chain, the residuals, rows below the fit and gradients kept for the next move are a fresh start's."""
    X, v = small_data(LINE_ROWS, 10)
    target = kng_quantile.QuantileTarget(X, v, 0.5, 1.0, "linf")
    kng_sampler.run_chains(np.random.default_rng(10), target, 2, 2.0, 20, chains=5)
    (kept,) = target.walkers.values()
    np.testing.assert_allclose(kept.r, target.v - kept.theta @ target.XT, atol=1e-12)
    np.testing.assert_array_equal(kept.below, kept.r <= 0.0)
    every_row = (v[None, :] <= kept.theta @ X.T) @ X - 0.5 * X.sum(axis=0)
    np.testing.assert_allclose(kept.g, every_row, atol=1e-9)
    np.testing.assert_allclose(target.gradient(kept.theta), every_row, atol=1e-9)


# --------------------------------------------------------------------------
# Two dimensions: the numerically normalised density
# --------------------------------------------------------------------------

#: Cells per side of the grid on [-B, B]^2 whose centres inside the l1 ball carry the density.
CELLS = 1001


@functools.cache
def l1_grid(B: float) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Cell centres inside the l1 ball; per row w of :data:`DIRECTIONS`, the order and sorted values of ``grid @ w``."""
    centres = -B + (np.arange(CELLS) + 0.5) * (2.0 * B / CELLS)
    grid = np.stack(np.meshgrid(centres, centres, indexing="ij"), axis=-1).reshape(-1, 2)
    grid = grid[np.abs(grid).sum(axis=1) <= B]
    orders = [np.argsort(grid @ w) for w in DIRECTIONS]
    return grid, orders, [(grid @ w)[order] for w, order in zip(DIRECTIONS, orders, strict=True)]


def grid_mass(target: kng_sampler.Target, B: float) -> np.ndarray:
    """The density's mass on each cell of :func:`l1_grid` (the midpoint rule)."""
    grid, _, _ = l1_grid(B)
    log_density = -target.c * np.concatenate([target.utility(chunk) for chunk in np.array_split(grid, 50)])
    mass = np.exp(log_density - log_density.max())
    return mass / mass.sum()


def grid_cdfs(target: kng_sampler.Target, B: float) -> list:
    """CDFs of ``theta @ w`` for each row w of :data:`DIRECTIONS`, from :func:`grid_mass`."""
    mass = grid_mass(target, B)
    _, orders, values = l1_grid(B)
    return [
        functools.partial(np.interp, xp=xs, fp=np.cumsum(mass[order]), left=0.0, right=1.0)
        for order, xs in zip(orders, values, strict=True)
    ]


def grid_draws(target: kng_sampler.Target, B: float, size: int, seed: int) -> np.ndarray:
    """``size`` draws from the grid's density: a cell by its mass, then a point uniform in the cell."""
    rng = np.random.default_rng(seed)
    grid, _, _ = l1_grid(B)
    cells = rng.choice(grid.shape[0], size=size, p=grid_mass(target, B))
    return grid[cells] + rng.uniform(-B / CELLS, B / CELLS, (size, 2))


def rejected_directions(draws: np.ndarray, cdfs: list) -> list[int]:
    """Indices of the directions whose KS test rejects the draws at :data:`ALPHA`."""
    return [j for j, (w, cdf) in enumerate(zip(DIRECTIONS, cdfs, strict=True)) if ks_check(draws @ w, cdf).rejected]


def assert_power_at_chain_draws(target: kng_sampler.Target, B: float, cdfs: list) -> None:
    """The comparison at :data:`CHAIN_DRAWS` has power: grid draws at c pass, at ``c x 0.7`` and ``x 1.3`` fail."""
    assert rejected_directions(grid_draws(target, B, CHAIN_DRAWS, 0), cdfs) == []
    for factor, seed in ((0.7, 1), (1.3, 2)):
        wrong = grid_draws(replace(target, c=target.c * factor), B, CHAIN_DRAWS, seed)
        assert rejected_directions(wrong, cdfs), f"no power at c x {factor}"


def quantile_target(c: float, norm: str = "linf") -> kng_quantile.QuantileTarget:
    X, v = small_data(15, 3)
    return kng_quantile.QuantileTarget(X, v, 0.5, c, norm)


def least_squares_target(c: float, norm: str = "linf") -> kng_sampler.LeastSquaresTarget:
    X, v = small_data(15, 4)
    return kng_sampler.LeastSquaresTarget(X.T @ X, X.T @ v, c, norm)


@pytest.mark.slow
def test_quantile_chain_fits_the_density_in_two_dimensions() -> None:
    """The paper's linf norm (the norm enters only through the target's utility, shared with l2 and l1).

    :data:`CHAIN_DRAWS` draws made as ``kng.fit`` makes one (default sweeps), in blocks of chains.
    """
    B = 2.0
    target = quantile_target(1.0, "linf")
    cdfs = grid_cdfs(target, B)
    sweeps = kng.default_steps(2, "quantreg")
    draws = in_blocks(lambda rng, m: kng_sampler.run_chains(rng, target, 2, B, sweeps, chains=m), 0, CHAIN_DRAWS)
    assert rejected_directions(draws, cdfs) == []
    assert_power_at_chain_draws(target, B, cdfs)


@pytest.mark.parametrize("norm", ["linf", "l2", "l1"])
def test_least_squares_exact_sampler_fits_the_density_in_two_dimensions(norm: str) -> None:
    B = 1.0
    target = least_squares_target(0.15, norm)
    cdfs = grid_cdfs(target, B)

    def draws(c: float, seed: int) -> np.ndarray:
        def block(rng: np.random.Generator, m: int) -> np.ndarray:
            theta, accepted = kng_sampler.exact_least_squares(rng, replace(target, c=c), B, m)
            assert accepted.all()
            return theta

        return in_blocks(block, seed, DRAWS)

    assert rejected_directions(draws(0.15, 0), cdfs) == []
    for factor, seed in ((0.7, 1), (1.3, 2)):
        assert rejected_directions(draws(0.15 * factor, seed), cdfs), f"no power at c x {factor}"


@pytest.mark.slow
def test_least_squares_fallback_chain_fits_the_density_in_two_dimensions() -> None:
    """The chain used when every exact proposal is rejected, run on its own (default sweeps, blocks of chains)."""
    B = 1.0
    target = least_squares_target(0.15)
    cdfs = grid_cdfs(target, B)
    lam = kng_sampler.KAPPA / (target.c * B)
    sweeps = kng.default_steps(2, "ols")
    draws = in_blocks(lambda rng, m: kng_sampler.run_chains(rng, target, 2, B, sweeps, m, lam), 0, CHAIN_DRAWS)
    assert rejected_directions(draws, cdfs) == []
    assert_power_at_chain_draws(target, B, cdfs)


def test_exact_sampler_falls_back_when_the_fit_is_outside_the_domain() -> None:
    """A response far from the declared model: the untruncated density misses Theta, the chain takes over."""
    X, v = small_data(200, 5)
    target = kng_sampler.LeastSquaresTarget(X.T @ X, X.T @ (v + 3.0), 5.0, "linf")
    _, accepted = kng_sampler.exact_least_squares(np.random.default_rng(0), target, 1.0, 8, tries=256)
    assert not accepted.any()
    draws = kng_sampler.sample_least_squares(np.random.default_rng(0), target, 1.0, 10, chains=8)
    assert np.all(np.abs(draws).sum(axis=1) <= 1.0 + 1e-12)
