"""Privacy audit of NoisyStats (Alabi et al. 2022, Algorithm 1, and its multivariate form).

docs/PRIVACY_TESTING.md, "An audit that fits in CI": step 1 (replay on corner
pairs: every release moves by at most, and on the worst pair by at least 0.9
of, its declared sensitivity), step 3 (gray-box Clopper-Pearson lower bound
on the eps of each internal release) and step 5 (canaries the audits must
flag). The p = 1 path is also checked draw for draw against a line-by-line
transcription of Algorithm 1. The replays cover the standard errors'
releases too (SE_RELEASES; their gray-box audit is in
tests/test_noisystats_inference.py).

The gray-box audits run at eps = 3 in total, so every release of the
one-regressor fit has eps = 1 (docs/PRIVACY_TESTING.md: audit at eps about 1).
Each gray-box assertion ``eps_lb <= claimed eps`` fails falsely with
probability at most alpha = 1e-6 (see dpstats/audit/graybox.py); each test
states its total. Everything is seeded, so the suite is deterministic in
practice.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpstats.audit import (
    Forcing,
    GrayBoxSamples,
    collect_graybox_samples,
    corner_pairs,
    design_from_arrays,
    diagonal_pair,
    eps_lower_bound,
    graybox_audit,
    pair_from_points,
    replay,
    run_recorded,
    understated_sensitivity,
    weaker_noise,
)
from dpstats.mechanisms.base import PrivacyRequest, Release
from dpstats.mechanisms.noisystats import mechanism as noisystats
from dpstats.mechanisms.noisystats.repair import SINGULAR
from dpstats.privacy import noise
from dpstats.privacy.accounting import PrivacySpent
from dpstats.privacy.noise import laplace_mechanism

FIT = noisystats.fit
PRIVACY = PrivacyRequest(eps=3.75)  # the point's three releases get 3.75 * 0.8 / 3 = 1 each
N = 10
UNIT = [(0.0, 1.0)]
ALPHA = 1e-6
CENTERED = ["ncov(x, y)", "nvar(x)", "intercept"]
ORIGIN = ["X'y", "X'X"]
SE_RELEASES = ["SE: sum(x)", "SE: RSS", "SE: HC meat"]


def _move(base: tuple[float, float], last: tuple[float, float], moved: tuple[float, float]):
    """One-regressor pair: N - 1 rows at ``base``, the last row ``last`` vs ``moved``."""
    rows = np.array([base] * (N - 1) + [last], dtype=float)
    rows_p = rows.copy()
    rows_p[-1] = moved
    return pair_from_points(rows, rows_p, UNIT, (0.0, 1.0), label=f"{N - 1} x {base}, last {last} -> {moved}")


# The worst pairs for the intercept given a forced slope a (its sensitivity
# is (1 + |a|)/n): y-bar up by 1/n while x-bar moves against the slope.
SLOPE_POSITIVE = [np.array(0.5), np.array(1.0)]  # forced ncov, nvar: slope 0.5
SLOPE_NEGATIVE = [np.array(-0.5), np.array(1.0)]  # slope -0.5
INTERCEPT_PAIR_POSITIVE = _move((0.0, 0.0), (1.0, 0.0), (0.0, 1.0))
INTERCEPT_PAIR_NEGATIVE = _move((0.0, 0.0), (0.0, 0.0), (1.0, 1.0))


# --------------------------------------------------------------------------
# Neighbours and designs
# --------------------------------------------------------------------------


def test_design_from_arrays_adds_intercept_bounds_and_refuses_out_of_box_data() -> None:
    """Deterministic."""
    X = np.column_stack([np.ones(3), [0.0, 0.5, 1.0]])
    design = design_from_arrays([0.0, 1.0, 0.5], X, y_bounds=(0, 1), x_bounds=UNIT)
    np.testing.assert_array_equal(design.x_bounds, [[1.0, 1.0], [0.0, 1.0]])
    assert design.intercept_index == 0 and design.term_names == ("Intercept", "x1") and design.n == 3
    with pytest.raises(ValueError, match="inside the declared bounds"):
        design_from_arrays([0.0, 2.0, 0.5], X, y_bounds=(0, 1), x_bounds=UNIT)


def test_corner_pairs_are_48_replace_one_pairs_for_one_regressor() -> None:
    """Deterministic: 4 base corners x 12 moves, same n, exactly one row differs."""
    pairs = corner_pairs(N, UNIT, (0.0, 1.0))
    assert len(pairs) == 48
    for pair in pairs:
        assert pair.d.n == pair.d_prime.n == N
        differ = (pair.d.X != pair.d_prime.X).any(axis=1) | (pair.d.y != pair.d_prime.y)
        assert differ.sum() == 1
    assert len(corner_pairs(N, UNIT * 3, (0.0, 1.0), bases="lowest")) == 16 * 15


# --------------------------------------------------------------------------
# Algorithm 1, line by line
# --------------------------------------------------------------------------


def algorithm_1(x: np.ndarray, y: np.ndarray, eps: float, rng: np.random.Generator) -> tuple[float, float] | None:
    """Alabi et al. 2022, Algorithm 1 (NoisyStats) transcribed line by line; None is the paper's ⊥.

    Each ``value + Lap(3 Delta / eps)`` is the float-safe Laplace mechanism at eps / 3
    (dpstats/privacy/grid_noise.py), so the same generator gives the same draws.
    """

    def plus_laplace(value: float, sensitivity: float) -> float:
        return float(noise.laplace_mechanism(rng, np.array([value]), sensitivity, eps / 3, "Algorithm 1")[0])

    n = x.size
    delta_1 = delta_2 = 1 - 1 / n
    x_bar, y_bar = x.mean(), y.mean()
    ncov = np.sum((x - x_bar) * (y - y_bar))
    nvar = np.sum((x - x_bar) ** 2)
    noisy_ncov, noisy_nvar = plus_laplace(ncov, delta_1), plus_laplace(nvar, delta_2)
    if noisy_nvar > 0:
        alpha = noisy_ncov / noisy_nvar
        delta_3 = 1 / n * (1 + abs(alpha))
        beta = plus_laplace(y_bar - alpha * x_bar, delta_3)
        p25 = 0.25 * alpha + beta
        p75 = 0.75 * alpha + beta
        return p25, p75
    return None


@pytest.mark.parametrize("bounds", [((0.0, 1.0), (0.0, 1.0)), ((10.0, 20.0), (-5.0, 5.0))], ids=["unit", "rescaled"])
def test_noisystats_one_regressor_is_algorithm_1(bounds) -> None:
    """Deterministic: same seed, same draws (L1 for ncov, L2 for nvar, then L3), same p25/p75 and ⊥."""
    (x_lo, x_hi), (y_lo, y_hi) = bounds
    rng = np.random.default_rng(19)
    datasets = [
        (rng.uniform(size=25), rng.uniform(size=25)),
        (np.r_[np.zeros(6), np.ones(2)], rng.uniform(size=8)),
        (np.full(12, 0.3), rng.uniform(size=12)),  # nvar = 0: fails about half the time
    ]
    eps = 0.7
    outcomes = {"failed": 0, "succeeded": 0}
    for u, v in datasets:
        x, y = x_lo + (x_hi - x_lo) * u, y_lo + (y_hi - y_lo) * v
        design = design_from_arrays(
            y, np.column_stack([np.ones(x.size), x]), y_bounds=(y_lo, y_hi), x_bounds=[(x_lo, x_hi)]
        )
        for seed in range(40):
            expected = algorithm_1(u, v, eps, np.random.default_rng(seed))
            release = FIT(design, PrivacyRequest(eps=eps, se_share=0), np.random.default_rng(seed))
            assert release.failed == (expected is None)
            outcomes["failed" if release.failed else "succeeded"] += 1
            if expected is None:
                continue
            intercept, slope = release.params
            at = np.array([x_lo + 0.25 * (x_hi - x_lo), x_lo + 0.75 * (x_hi - x_lo)])
            np.testing.assert_allclose(intercept + slope * at, y_lo + (y_hi - y_lo) * np.array(expected), rtol=1e-10)
    assert outcomes["failed"] > 0 and outcomes["succeeded"] > 0


# --------------------------------------------------------------------------
# Replay (step 1)
# --------------------------------------------------------------------------


@pytest.mark.usefixtures("few_replicates")
@pytest.mark.parametrize("singular", SINGULAR)
@pytest.mark.parametrize(
    "slope_bounds, y_bounds", [(UNIT, (0.0, 1.0)), ([(-2.0, 3.0)], (10.0, 20.0))], ids=["unit", "rescaled"]
)
def test_replay_one_regressor_attains_every_sensitivity(slope_bounds, y_bounds, singular: str) -> None:
    """Deterministic: 48 corner pairs x 6 seeds; each release within and reaching (>= 0.9) its sensitivity,
    the standard errors' releases >= 0.99 (measured 1.0).

    With ``singular="repair"`` too: the repair is post-processing of the releases, so the replay's
    final check (the same release on D and D' once the noisy releases are forced) holds as well.
    """
    options = {"singular": singular}
    report = replay(FIT, corner_pairs(N, slope_bounds, y_bounds), PRIVACY, seeds=range(6), options=options)
    report.assert_sound(min_ratio=0.9, names=CENTERED)
    report.assert_sound(min_ratio=0.99, names=SE_RELEASES)


@pytest.mark.usefixtures("few_replicates")
@pytest.mark.parametrize("singular", SINGULAR)
def test_replay_three_regressors_attains_every_sensitivity(singular: str) -> None:
    """Deterministic: the origin -> all-ones move attains S_xy and S_xx; corner moves the intercept.

    The standard errors' releases are sound; the meat reaches 0.82-0.84 of its declared sensitivity (the
    residual bound and the entries' extremes are not all reached by one move), the others 1.0.
    """
    pairs = corner_pairs(8, UNIT * 3, (0.0, 1.0), bases="lowest")
    # with singular="fail" the intercept is released only when the noisy S_xx is positive definite, which
    # happens for 1 seed in 20 here: seed 7 is the first of range(60) where it does (on every pair)
    report = replay(FIT, pairs, PRIVACY, seeds=(0, 1, 7), options={"singular": singular})
    report.assert_sound(min_ratio=0.9, names=CENTERED)
    report.assert_sound(min_ratio=0.8, names=SE_RELEASES)


@pytest.mark.usefixtures("few_replicates")
@pytest.mark.parametrize("singular", SINGULAR)
def test_replay_through_the_origin_attains_every_sensitivity(singular: str) -> None:
    """Deterministic: no intercept, non-negative bounds (each product's interval is attained jointly);
    the standard errors' meat reaches >= 0.99 of its sensitivity (measured 0.9997)."""
    pairs = corner_pairs(8, [(0.0, 2.0), (0.5, 1.0)], (0.0, 3.0), intercept=False, bases="all")
    # seeds whose noisy X'X is positive definite on every pair, so that singular="fail" releases the meat too
    report = replay(FIT, pairs, PRIVACY, seeds=(3, 7), options={"singular": singular})
    report.assert_sound(min_ratio=0.9, names=ORIGIN)
    report.assert_sound(min_ratio=0.99, names=["SE: HC meat"])


@pytest.mark.usefixtures("few_replicates")
def test_replay_through_the_origin_with_bounds_across_zero_is_sound() -> None:
    """Deterministic, soundness only: with a bound across 0, the declared X'X sensitivity is loose.

    The diagonal entries use the product interval [lo, hi] x [lo, hi] where
    x^2 has the narrower range [0, max(lo^2, hi^2)], and the entries' worst
    cases are not attained by one move; the replay measured about 0.73 of the
    declared X'X sensitivity (and 0.94 for X'y). Sound (no overstated
    privacy), just more noise than needed.
    """
    pairs = corner_pairs(8, [(-1.0, 2.0), (0.5, 1.0)], (-1.0, 3.0), intercept=False, bases="all")
    replay(FIT, pairs, PRIVACY, seeds=range(2)).assert_sound(min_ratio=None, names=ORIGIN)


@pytest.mark.usefixtures("few_replicates")
def test_replay_flags_the_half_sensitivity_canary() -> None:
    """Deterministic: with Lemma 19's 1 - 1/n halved, ncov and nvar move by twice their declared sensitivity."""
    with understated_sensitivity(noisystats, "centered_sensitivity"):
        report = replay(FIT, corner_pairs(N, UNIT, (0.0, 1.0)), PRIVACY, seeds=range(2))
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound()
    assert {v.name for v in report.violations} == {"ncov(x, y)", "nvar(x)"}
    assert report.ratio("ncov(x, y)") == pytest.approx(2.0) and report.ratio("nvar(x)") == pytest.approx(2.0)


def test_replay_flags_data_dependent_sensitivity_and_branches() -> None:
    """Deterministic: the harness catches a local-sensitivity release and a branch on the data."""

    def local_sensitivity(design, privacy, rng):
        laplace_mechanism(rng, design.y.sum(), np.abs(design.y).max(), privacy.eps, "sum(y)")

    def branch_on_data(design, privacy, rng):
        laplace_mechanism(rng, design.y.mean(), 1.0 / design.n, privacy.eps, "mean(y)")
        if design.y.max() > 0.5:
            laplace_mechanism(rng, 0.0, 1.0, privacy.eps, "extra")

    pairs = [_move((0.0, 0.0), (0.0, 0.0), (0.0, 1.0))]
    messages = [str(v) for v in replay(local_sensitivity, pairs, PRIVACY, seeds=[0]).violations]
    assert any("depends on the data" in m for m in messages)
    messages = [str(v) for v in replay(branch_on_data, pairs, PRIVACY, seeds=[0]).violations]
    assert any("release sequence differs" in m for m in messages)


# --------------------------------------------------------------------------
# Gray-box audit (step 3) and canaries (step 5)
# --------------------------------------------------------------------------

SCALAR_AUDITS = {  # key: (release name, worst pair, forced earlier outputs)
    "ncov(x, y)": ("ncov(x, y)", diagonal_pair(N, UNIT, (0.0, 1.0)), "reference"),
    "nvar(x)": ("nvar(x)", diagonal_pair(N, UNIT, (0.0, 1.0)), "reference"),
    "intercept, slope > 0": ("intercept", INTERCEPT_PAIR_POSITIVE, SLOPE_POSITIVE),
    "intercept, slope < 0": ("intercept", INTERCEPT_PAIR_NEGATIVE, SLOPE_NEGATIVE),
}


def _scalar_audit(key: str, seed: int, engine: str = "auto"):
    name, pair, forced = SCALAR_AUDITS[key]
    return graybox_audit(FIT, pair, PRIVACY, name, runs=20_000, seed=seed, alpha=ALPHA, forced=forced, engine=engine)


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(SCALAR_AUDITS))
def test_graybox_correct_noisystats_within_claim(key: str) -> None:
    """eps_lb <= 1 (false failure <= 1e-6), and >= 0.5 on this worst pair.

    Observed over 20 seeds: 0.79-0.92, median 0.85, sd 0.024. The second check
    keeps the audit honest (a vacuous audit gives 0); it fails only on a
    14-standard-deviation drop: < 1e-12.
    """
    result = _scalar_audit(key, seed=101 + sorted(SCALAR_AUDITS).index(key))
    result.assert_within_claim()
    assert result.eps_claimed == pytest.approx(1.0)
    assert result.eps_lb >= 0.5, result.as_text()


@pytest.mark.slow
def test_graybox_runs_engine_matches_batched_engine_and_is_within_claim() -> None:
    """The 'runs' engine (20,000 real runs a side) gives samples of the batched engine's law for the first release.

    The runs draw one exact release at a time (dpstats/privacy/samplers.py), the batch draws them vectorised:
    the same exact law from differently consumed streams, so a two-sample KS test accepts (false failure 1e-6
    per side); the audit's false failure is <= 1e-6.
    """
    _, pair, _ = SCALAR_AUDITS["ncov(x, y)"]
    batched = collect_graybox_samples(FIT, pair, PRIVACY, "ncov(x, y)", runs=20_000, seed=5, engine="batched")
    runs = collect_graybox_samples(FIT, pair, PRIVACY, "ncov(x, y)", runs=20_000, seed=5, engine="runs")
    assert (batched.engine, runs.engine) == ("batched", "runs")
    for ours, theirs in ((runs.noisy_d, batched.noisy_d), (runs.noisy_dp, batched.noisy_dp)):
        assert stats.ks_2samp(np.ravel(ours), np.ravel(theirs)).pvalue > ALPHA
    bound = eps_lower_bound(*runs.projected(), alpha=ALPHA)
    assert bound.eps_lb <= runs.eps, bound


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(SCALAR_AUDITS))
def test_graybox_flags_noise_at_twice_eps(key: str) -> None:
    """Canary (a): Laplace draws halved (really 2 eps). Flagged: eps_lb > 1.

    Observed over 20 seeds: 1.68-1.83, median 1.79, sd 0.035; a miss needs a
    22-standard-deviation drop: probability < 1e-12.
    """
    with weaker_noise(0.5, "laplace"):
        result = _scalar_audit(key, seed=201 + sorted(SCALAR_AUDITS).index(key))
    assert result.flagged, result.as_text()


@pytest.mark.slow
def test_graybox_runs_engine_flags_noise_at_twice_eps() -> None:
    """Canary (a) through 20,000 real runs a side (miss probability < 1e-12, as above)."""
    with weaker_noise(0.5, "laplace"):
        result = _scalar_audit("ncov(x, y)", seed=7, engine="runs")
    assert result.engine == "runs" and result.flagged, result.as_text()


@pytest.mark.slow
@pytest.mark.parametrize("key", ["ncov(x, y)", "nvar(x)"])
def test_graybox_flags_half_sensitivity(key: str) -> None:
    """Canary (b): centered_sensitivity halved, so ncov and nvar are really 2 eps (eps_lb 1.68-1.83 over 20 seeds).

    Miss probability < 1e-12, as for canary (a).
    """
    with understated_sensitivity(noisystats, "centered_sensitivity", 0.5):
        result = _scalar_audit(key, seed=301 + len(key))
    assert result.flagged, result.as_text()


# Three regressors: the all-ones move attains S_xy and S_xx; for the intercept
# the slopes are forced to b = (0.5, -0.5, 0.5) (S_xx = I) and the last row
# moves from (u = [b > 0], v = 0) to (u = [b < 0], v = 1), attaining (1 + |b|_1)/n.
THREE = diagonal_pair(N, UNIT * 3, (0.0, 1.0))
THREE_SLOPES = [np.array([0.5, -0.5, 0.5]), np.array([1.0, 0.0, 0.0, 1.0, 0.0, 1.0])]
_rows = np.zeros((N, 4))
_moved = _rows.copy()
_rows[-1], _moved[-1] = [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]
THREE_INTERCEPT = pair_from_points(_rows, _moved, UNIT * 3, (0.0, 1.0), label="intercept move, b = (.5, -.5, .5)")
ORIGIN_PAIR = diagonal_pair(N, [(0.0, 2.0), (0.5, 1.0)], (0.0, 3.0), intercept=False)
VECTOR_AUDITS = {  # key: (release name, worst pair, forced earlier outputs)
    "3 regressors: ncov(x, y)": ("ncov(x, y)", THREE, "reference"),
    "3 regressors: nvar(x)": ("nvar(x)", THREE, "reference"),
    "3 regressors: intercept": ("intercept", THREE_INTERCEPT, THREE_SLOPES),
    "through the origin: X'y": ("X'y", ORIGIN_PAIR, "reference"),
    "through the origin: X'X": ("X'X", ORIGIN_PAIR, "reference"),
}


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(VECTOR_AUDITS))
def test_graybox_vector_releases(key: str) -> None:
    """Vector releases, reduced by the Laplace log-likelihood ratio, 100,000 batched samples a side.

    The correct mechanism stays within its claim (false failure <= 1e-6) and
    canary (a) is flagged. Observed over 10 seeds, correct / canary: three
    regressors (claimed 1) ncov 0.83-0.86 / 1.74-1.82, nvar 0.53-0.67 /
    1.35-1.55, intercept 0.92-0.95 / 1.88-1.92; through the origin (claimed
    1.5) X'y 1.37-1.44 / 2.70-2.82, X'X 1.28-1.34 / 2.61-2.76. The closest
    call, the 6-entry nvar(x) canary (median 1.47, sd 0.05), would need a
    9-standard-deviation drop to pass as correct: miss probability < 1e-12.
    """
    name, pair, forced = VECTOR_AUDITS[key]
    seed = 401 + sorted(VECTOR_AUDITS).index(key)
    options = {"runs": 100_000, "seed": seed, "alpha": ALPHA, "forced": forced}
    llr = GrayBoxSamples.laplace_log_likelihood_ratio
    correct = graybox_audit(FIT, pair, PRIVACY, name, reduce=llr, **options)
    correct.assert_within_claim()
    with weaker_noise(0.5, "laplace"):
        broken = graybox_audit(FIT, pair, PRIVACY, name, reduce=llr, **options)
    assert broken.flagged, broken.as_text()


@pytest.mark.slow
def test_graybox_repaired_intercept() -> None:
    """``singular="repair"``: the intercept's release at the repaired slopes, on the worst pair for them.

    With the releases forced to THREE_SLOPES the repaired S_xx is lambda I
    (dpstats/mechanisms/noisystats/repair.py), the slopes b / lambda keep b's
    signs and the pair attains (1 + |b / lambda|_1)/n. The correct release
    stays within its claim of 1 (false failure <= 1e-6); canary (a) is
    flagged. Observed over 10 seeds, correct / canary: 0.92-0.94 /
    1.88-1.92, as for the unrepaired intercept: a miss needs the canary's
    bound to fall below 1, many standard deviations away (< 1e-12).
    """
    options = {"runs": 100_000, "seed": 451, "alpha": ALPHA, "forced": THREE_SLOPES, "options": {"singular": "repair"}}
    llr = GrayBoxSamples.laplace_log_likelihood_ratio
    correct = graybox_audit(FIT, THREE_INTERCEPT, PRIVACY, "intercept", reduce=llr, **options)
    correct.assert_within_claim()
    assert correct.eps_lb >= 0.5, correct.as_text()
    with weaker_noise(0.5, "laplace"):
        broken = graybox_audit(FIT, THREE_INTERCEPT, PRIVACY, "intercept", reduce=llr, **options)
    assert broken.flagged, broken.as_text()


# --------------------------------------------------------------------------
# The harness's own plumbing
# --------------------------------------------------------------------------


def _three_releases(design, privacy, rng):
    """A toy core mechanism: each release's value is the previous noisy output."""
    a = laplace_mechanism(rng, design.y.mean(), 1.0 / design.n, privacy.eps, "a")
    b = laplace_mechanism(rng, a, 1.0, privacy.eps, "b")
    c = laplace_mechanism(rng, b, 1.0, privacy.eps, "c")
    return a, b, c


def test_forcing_and_stopping_follow_the_recorder_contract() -> None:
    """Deterministic: None entries keep their own output, forced ones replace it, stop_at ends the run."""
    design = INTERCEPT_PAIR_POSITIVE.d
    out, log = run_recorded(_three_releases, design, PRIVACY, np.random.default_rng(0), forcing=Forcing([None, 5.0]))
    assert out[0] == log[0].noisy and out[1] == 5.0 and log[2].value == 5.0
    out, log = run_recorded(_three_releases, design, PRIVACY, np.random.default_rng(0), forcing=Forcing([None], 1))
    assert out is None and [r.name for r in log] == ["a", "b"]


def test_graybox_falls_back_to_runs_for_releases_that_cannot_be_batched() -> None:
    """Deterministic: a Gumbel draw inside the audited release makes 'auto' use real runs."""

    def gumbel_then_laplace(design, privacy, rng):
        shift = noise.gumbel(rng) * 0.0
        laplace_mechanism(rng, design.y.mean() + shift, 1.0 / design.n, privacy.eps, "g")

    samples = collect_graybox_samples(gumbel_then_laplace, INTERCEPT_PAIR_POSITIVE, PRIVACY, "g", runs=50)
    assert samples.engine == "runs" and samples.noisy_d.shape == (50,)


def test_replay_flags_data_reaching_the_output_outside_the_noise_primitives() -> None:
    """Deterministic: a release whose final output also uses the raw data (SmartNoise #622 class)."""

    def leaks_after_noise(design, privacy, rng):
        mean = laplace_mechanism(rng, design.y.mean(), 1.0 / design.n, privacy.eps, "mean(y)")
        spent = PrivacySpent(notion="pure", eps=privacy.eps)
        return Release(params=np.array([mean, design.y.max()]), cov=np.eye(2), privacy=spent, se_note="")

    report = replay(leaks_after_noise, [INTERCEPT_PAIR_POSITIVE], PRIVACY, seeds=[0])
    assert any("final release differs" in str(v) for v in report.violations)
