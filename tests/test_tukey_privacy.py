"""Privacy audit of method="tukey" (proof in the docstring of dpstats/mechanisms/tukey/mechanism.py).

docs/PRIVACY_TESTING.md, "An audit that fits in CI", with the shared harness in dpstats/audit:

1. Sensitivity of the distance-to-unsafety lower bound D, by brute force under
   replace-one neighbours: on tiny data, every row replaced, and every model
   refitted with one of its rows replaced by every value of a grid (extremes,
   ties, non-finite values), with the partition fixed; and on model clouds,
   one point replaced. ``|D - D'| <= 1`` always, and 1 is reached.
   One replaced row changes exactly one model, bit for bit.
2. Replay (dpstats/audit/replay.py) of the row-level mechanism on neighbours (OLS, and the batch MLEs
   of dp_logit / dp_probit on binary rows, whose one-row-one-model property is checked like OLS's):
   every release (D: L1 <= 1; the sampled point: depth moves by <= 1 there;
   the standard errors' spread of each coordinate: its rank utility moves by
   <= 1 on a public grid) within its sensitivity and reaching it, outputs
   equal once the releases are forced; a spread release that declares half
   its sensitivity is flagged.
3. The safety lemma, exactly: on 1-d and 2-d clouds with D >= 1, the restricted
   exponential mechanism's output laws on Y and each replace-one neighbour
   are computed cell by cell, and their hockey-stick divergence at eps2 is at
   most delta (measured 2e-9 in 1-d, 2e-7 in 2-d, for delta = 0.01). The
   canary ``beta = eps2`` (Amin et al.'s add/remove shortcut, no factor 2)
   reaches 0.74 and 0.56: replacement is not monotone.
4. Goodness of fit of the depth sampler against its exact law (KS on the
   continuous depth, 10,000 draws, alpha 1e-6) with the power check at eps x
   0.7 and x 1.3, and an off-by-one canary (restricting to depth t + 1). The
   wrong laws are 0.147 (eps2 = 1) and 0.276 (eps2 = 4) or more away from
   the exact one in CDF sup norm, the off-by-one law 0.089, against a KS
   critical value of 0.0269 at 10,000 draws: a miss has probability below
   2 exp(-2 x 10,000 x 0.062^2) < 1e-33 (Dvoretzky-Kiefer-Wolfowitz).
5. Gray-box audit (dpstats/audit/graybox.py) of the PTR statistic's Laplace
   release on a worst pair, at eps = ln 3 (eps1 = 0.549), 200,000 runs a side:
   within the claim (measured eps_lb 0.504); canaries flagged: the public
   code's noise scale (eps1 instead of 1/eps1, a true eps of 1/eps1 = 1.82;
   eps_lb 1.739) and noise halved (2 x eps; eps_lb 1.033).
6. On an unsafe cloud (D = 0) the test passes with probability exactly delta.

False failures: the KS tests and gray-box audits at alpha = 1e-6 each, the
binomial check below at 1e-6; the brute-force and exact checks are
deterministic.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math

import numpy as np
import pytest

from dpstats.audit import (
    NeighbourPair,
    audit_sampler,
    design_from_arrays,
    graybox_audit,
    scaled_return,
    weaker_noise,
)
from dpstats.audit.replay import replay
from dpstats.design.matrix import Design
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.tukey import depth as td
from dpstats.mechanisms.tukey import exact_draw
from dpstats.mechanisms.tukey import inference as tukey_inference
from dpstats.mechanisms.tukey import mechanism as tukey
from dpstats.mechanisms.tukey.jackknife import batch_ols_jackknife
from dpstats.mechanisms.tukey.logit_models import glm_batch_fit
from dpstats.mechanisms.tukey.models import partition_models
from dpstats.mechanisms.tukey.quantile_models import quantile_batch_fit
from dpstats.privacy import noise

EPS, DELTA = math.log(3), 1e-5
#: Tiny row-level data: n = 60, one regressor and an intercept, m = 20 models of 3 rows (t = 5).
TINY_EPS, TINY_DELTA, TINY_M = 40.0, 0.3, 20


def _distance(models: np.ndarray, eps: float, delta: float) -> int:
    P = td.sorted_projections(models)
    return td.distance_to_unsafety(
        td.log_volumes(td.log_side_lengths(P)), td.restricted_depth(len(models)), eps / 4, delta
    )


def _tiny_rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=60)
    return np.column_stack([np.ones(60), x]), 1.0 + 2.0 * x + rng.normal(size=60)


#: Replacement rows (x, y): far outliers, ties with the data, zeros, non-finite values.
CANDIDATES = [(x, y) for x in (-1e6, 0.0, 0.5, 1e6, np.inf) for y in (-1e6, 0.0, 1.0, 1e6, np.nan)]


@pytest.mark.slow
@pytest.mark.parametrize(("eps", "delta", "seed"), [(10.0, 0.3, 0), (40.0, 0.3, 5)])
def test_distance_is_1_sensitive_under_row_replacement_brute_force(eps: float, delta: float, seed: int) -> None:
    """Every row replaced by the first candidate, then every model by every candidate; the partition fixed.

    A replaced row moves the model of its batch only (the next test), so the
    first pass (60 neighbours) also finds one row of each of the 20 batches,
    and the second replaces that row by each other candidate (20 x 24
    neighbours): every model refitted with each candidate in its batch.
    """
    X, y = _tiny_rows(seed)
    models = partition_models(X, y, TINY_M, np.random.default_rng(seed))
    base = _distance(models, eps, delta)

    def replaced(row: int, candidate: tuple[float, float]) -> np.ndarray:
        X2, y2 = X.copy(), y.copy()
        X2[row, 1], y2[row] = candidate
        return partition_models(X2, y2, TINY_M, np.random.default_rng(seed))

    first, *others = CANDIDATES
    moves, batch_rows = [], {}
    for row in range(len(y)):
        moved = replaced(row, first)
        moves.append(_distance(moved, eps, delta) - base)
        batch_rows.setdefault(int(np.flatnonzero(np.any(moved != models, axis=1))[0]), row)
    assert len(batch_rows) == TINY_M
    for row, candidate in itertools.product(batch_rows.values(), others):
        moves.append(_distance(replaced(row, candidate), eps, delta) - base)
    assert max(np.abs(moves)) == 1, f"worst |D - D'| = {max(np.abs(moves))} (D = {base})"


@pytest.mark.parametrize(
    "batch_fit",
    [None, batch_ols_jackknife, quantile_batch_fit(0.5), quantile_batch_fit(0.9)],
    ids=["ols", "ols-jackknife", "median", "q0.9"],
)
def test_one_replaced_row_changes_exactly_one_model(batch_fit) -> None:
    """OLS batches, jackknifed (``dp_ols``) and quantile-regression batches (``dp_quantreg``), with far and
    non-finite rows."""
    X, y = _tiny_rows(2)
    a = partition_models(X, y, TINY_M, np.random.default_rng(9), batch_fit)
    for row, (x_new, y_new) in itertools.product((0, 17, 59), [(1e6, -1e6), (np.inf, 1.0), (0.5, np.nan)]):
        X2, y2 = X.copy(), y.copy()
        X2[row, 1], y2[row] = x_new, y_new
        b = partition_models(X2, y2, TINY_M, np.random.default_rng(9), batch_fit)
        assert np.all(np.isfinite(b))
        assert np.sum(np.any(a != b, axis=1)) == 1  # bit for bit: no other model moves


def test_distance_is_1_sensitive_under_model_replacement() -> None:
    """Clouds in d = 1, 2, 3 (m = 40 .. 400); each point replaced by far, central and tied values."""
    rng = np.random.default_rng(3)
    worst = 0
    for d, m, eps, delta in [(1, 40, 8.0, 0.01), (2, 120, 4.0, 1e-3), (3, 400, 2.0, 1e-5)]:
        Y = rng.standard_t(4, size=(m, d))
        base = _distance(Y, eps, delta)
        assert base >= 2
        replacements = [np.full(d, 1e9), np.full(d, -1e9), np.zeros(d), Y[0], np.median(Y, axis=0)]
        for k, q in itertools.product(range(0, m, max(1, m // 40)), replacements):
            Y2 = Y.copy()
            Y2[k] = q
            worst = max(worst, abs(base - _distance(Y2, eps, delta)))
    assert worst == 1


def _tiny_pairs() -> list[NeighbourPair]:
    X, y = _tiny_rows(0)
    wide = (-1e7, 1e7)

    def design(Xa: np.ndarray, ya: np.ndarray) -> Design:
        return design_from_arrays(ya, Xa, y_bounds=wide, x_bounds=[wide])

    pairs = []
    for row, (cx, cy) in itertools.product((0, 31, 59), [(-1e6, 1e6), (1e6, 1e6), (0.0, 0.0), (3.0, -5.0)]):
        X2, y2 = X.copy(), y.copy()
        X2[row, 1], y2[row] = cx, cy
        pairs.append(NeighbourPair(f"row {row} -> ({cx:g}, {cy:g})", design(X, y), design(X2, y2)))
    return pairs + [p.swapped() for p in pairs]


#: The whole eps, so that the point keeps TINY_EPS after the standard errors' default share.
TINY_TOTAL = TINY_EPS / (1 - tukey_inference.DEFAULT_SHARES[0])


def _replay(seeds: int = 4, **options):
    """The replay on the tiny pairs; several seeds, as the PTR test may fail before the later releases."""
    return replay(
        tukey.fit,
        _tiny_pairs(),
        PrivacyRequest(TINY_TOTAL, TINY_DELTA),
        seeds=range(seeds),
        options={"m": TINY_M, **options},
    )


def test_replay_every_release_within_and_reaching_its_sensitivity() -> None:
    """The distance, the point and the d spread releases of the standard errors (rank utility on a public grid)."""
    report = _replay()
    report.assert_sound(min_ratio=0.9)  # the worst pair reaches the sensitivity of every release
    assert report.releases[tukey.DISTANCE].norm == "l1" and report.releases[tukey.DISTANCE].sensitivity == 1.0
    assert report.releases[tukey.SAMPLE].norm == "linf" and report.releases[tukey.SAMPLE].sensitivity == 1.0
    for j in range(2):
        spread = report.releases[tukey_inference.spread_name(j)]
        assert spread.norm == "linf" and spread.sensitivity == 1.0
    print(report.as_text())


def test_replay_flags_a_spread_release_with_half_its_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    release = noise.exponential_mechanism_release

    def understated(rng, sampler, utility, sensitivity, eps, name):
        return release(rng, sampler, utility, sensitivity / 2 if name.startswith("SE") else sensitivity, eps, name)

    monkeypatch.setattr(tukey_inference.noise, "exponential_mechanism_release", understated)
    report = _replay(seeds=1)  # a canary needs one flagging run: both spreads are released and flagged here
    assert {v.name for v in report.violations} == {tukey_inference.spread_name(j) for j in range(2)}


def test_replay_flags_a_distance_with_sensitivity_2() -> None:
    with scaled_return(td, "distance_to_unsafety", 2.0):
        report = _replay(seeds=1, jackknife=False)  # a canary needs one flagging run (the paper's batch OLS here)
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound(min_ratio=None)


# --------------------------------------------------------------------------
# The safety lemma, computed exactly
# --------------------------------------------------------------------------


def _exact_laws(a: np.ndarray, b: np.ndarray, t: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Cell probabilities of the restricted mechanism on clouds a and b, on their common grid of breakpoints.

    An oracle independent of tukey_depth.py: depth counted directly at each
    cell's centre, density exp(beta depth) on depth >= t, times the cell volume.
    The depth is coordinate-wise, so it is counted on each axis's centres and
    combined over the product grid (cells in ``itertools.product`` order).
    """
    d = a.shape[1]
    edges = [np.unique(np.concatenate([a[:, j], b[:, j]])) for j in range(d)]
    centres = [(e[1:] + e[:-1]) / 2 for e in edges]
    log_volume = sum(np.ix_(*[np.log(np.diff(e)) for e in edges])).ravel()
    laws = []
    for cloud in (a, b):
        axis_depths = []
        for j, c in enumerate(centres):
            below = (cloud[None, :, j] <= c[:, None]).sum(axis=1)
            above = (cloud[None, :, j] >= c[:, None]).sum(axis=1)
            axis_depths.append(np.minimum(below, above))
        depth = functools.reduce(np.minimum, np.ix_(*axis_depths)).ravel()
        score = np.where(depth >= t, beta * depth + log_volume, -np.inf)
        w = np.exp(score - score.max())
        laws.append(w / w.sum())
    return laws[0], laws[1]


def _worst_hockey_stick(Y: np.ndarray, eps2: float, beta: float, stop_above: float = math.inf) -> float:
    """The largest hockey-stick divergence at eps2, both ways, over replace-one moves of every point."""
    m, d = Y.shape
    t = td.restricted_depth(m)
    worst = 0.0
    moves = [np.full(d, -50.0), np.array([-50.0, 50.0][:d]), np.zeros(d)]
    for k, q in itertools.product(range(m), moves):
        Y2 = Y.copy()
        Y2[k] = q
        p, p2 = _exact_laws(Y, Y2, t, beta)
        worst = max(worst, np.maximum(p - math.exp(eps2) * p2, 0).sum(), np.maximum(p2 - math.exp(eps2) * p, 0).sum())
        if worst > stop_above:
            break
    return float(worst)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2])
def test_safe_clouds_are_indistinguishable_from_every_neighbour(d: int) -> None:
    eps2, delta, m = 4.0, 0.01, 40
    Y = np.random.default_rng(1).normal(size=(m, d))
    assert _distance(Y, 2 * eps2, delta) >= 1  # certified safe (eps1 = eps2 here: eps = 2 eps2)
    assert _worst_hockey_stick(Y, eps2, beta=eps2 / 2) <= delta
    # Canary: no factor 2 (add/remove monotonicity does not hold for replacement).
    assert _worst_hockey_stick(Y, eps2, beta=eps2, stop_above=0.5) > 0.5


# --------------------------------------------------------------------------
# The depth sampler against its exact law
# --------------------------------------------------------------------------

CLOUD = td.sorted_projections(np.random.default_rng(5).normal(size=(40, 3)))
T40 = td.restricted_depth(40)
SAMPLER_DRAWS = 10_000


def _draw(restrict: int):
    def draw(rng: np.random.Generator, eps2: float, size: int) -> np.ndarray:
        return td.continuous_depth(CLOUD, exact_draw.sample_restricted(rng, CLOUD, restrict, eps2 / 2, size))

    return draw


@pytest.mark.slow
@pytest.mark.parametrize("eps2", [1.0, 4.0])
def test_depth_sampler_goodness_of_fit_with_power(eps2: float) -> None:
    """False failure 1e-6 (acceptance at eps2) + < 1e-33 (power; module docstring, step 4)."""
    cdf = td.continuous_depth_cdf(CLOUD, T40, eps2 / 2)
    audit = audit_sampler("tukey depth sampler", _draw(T40), cdf, eps=eps2, draws=SAMPLER_DRAWS)
    audit.assert_ok()


@pytest.mark.slow
def test_depth_sampler_test_flags_an_off_by_one_restriction() -> None:
    """Sampling from depth >= t + 1 instead of t (the laws are 0.089 apart; measured KS D = 0.089 at eps2 = 1)."""
    cdf = td.continuous_depth_cdf(CLOUD, T40, 0.5)
    audit = audit_sampler("restricted to t + 1", _draw(T40 + 1), cdf, eps=1.0, draws=SAMPLER_DRAWS, factors=())
    assert audit.at_eps.rejected


# --------------------------------------------------------------------------
# Gray-box audit of the PTR statistic, and its canaries
# --------------------------------------------------------------------------


def _models_design(models: np.ndarray) -> Design:
    names = tuple(f"b{j}" for j in range(models.shape[1]))
    return Design(
        y=np.zeros(len(models)),
        X=models,
        y_name="y",
        term_names=names,
        y_bounds=None,
        x_bounds=None,
        intercept_index=None,
    )


def _model_level(design: Design, privacy: PrivacyRequest, rng: np.random.Generator):
    """The mechanism on m given models (the rows of ``design.X``): the object of the privacy proof."""
    return tukey.release_from_models(design.X, privacy, rng)


def _worst_model_pair() -> NeighbourPair:
    rng = np.random.default_rng(3)
    Y = rng.normal(size=(600, 2))
    base = _distance(Y, EPS, DELTA)
    for k in range(len(Y)):
        Y2 = Y.copy()
        Y2[k] = 0.0
        if _distance(Y2, EPS, DELTA) == base - 1:
            return NeighbourPair(f"600 models, D = {base}, model {k} -> 0", _models_design(Y), _models_design(Y2))
    raise AssertionError("no pair at distance 1")


WORST = _worst_model_pair()
CANARIES = {
    "none": None,
    "public code: Laplace scale eps1 instead of 1/eps1": (EPS / 2) ** 2,
    "noise halved (2 x eps)": 0.5,
}


@pytest.mark.parametrize("canary", list(CANARIES))
def test_graybox_ptr_statistic(canary: str) -> None:
    factor = CANARIES[canary]
    context = contextlib.nullcontext() if factor is None else weaker_noise(factor)
    with context:
        result = graybox_audit(
            _model_level, WORST, PrivacyRequest(EPS, DELTA), tukey.DISTANCE, runs=200_000, seed=0, engine="batched"
        )
    assert result.eps_claimed == pytest.approx(EPS / 2)
    if factor is None:
        result.assert_within_claim()
        assert result.eps_lb > 0.8 * EPS / 2, result.as_text()  # the pair is adversarial
    else:
        assert result.flagged, result.as_text()


@pytest.mark.slow
def test_unsafe_clouds_pass_with_probability_delta() -> None:
    """D = 0 (a flat cloud): P(pass) = P(Lap(1/eps1) > log(1/(2 delta))/eps1) = delta; binomial, 4.9 sd."""
    delta, runs = 0.05, 4000
    flat = np.zeros((100, 2))
    assert _distance(flat, EPS, delta) == 0
    rng = np.random.default_rng(11)
    passed = sum(
        tukey.release_from_models(flat, PrivacyRequest(EPS, delta), rng)[2].get("reason") != tukey.PTR_FAILED
        for _ in range(runs)
    )
    sd = math.sqrt(runs * delta * (1 - delta))
    assert abs(passed - runs * delta) <= 4.9 * sd, (passed, runs * delta)


# --------------------------------------------------------------------------
# The binary path (dp_logit / dp_probit: batch MLEs, dpstats/mechanisms/tukey/logit_models.py)
# --------------------------------------------------------------------------

#: Binary rows: n = 480, one regressor in [-3, 3] and an intercept, m = 20 batches of 24 rows, base rate ~40%.
BINARY_M = 20


def _binary_rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.clip(rng.normal(size=480), -3.0, 3.0)
    return np.column_stack([np.ones(480), x]), (rng.uniform(size=480) < 1 / (1 + np.exp(0.4 - 0.8 * x))) * 1.0


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_one_replaced_row_changes_exactly_one_binary_model(link: str) -> None:
    """Corners of the box, a row that separates its batch, and non-finite or out-of-range values."""
    X, y = _binary_rows(4)
    fit = glm_batch_fit(link)
    a = partition_models(X, y, BINARY_M, np.random.default_rng(9), fit)
    assert np.all(np.abs(a) < 100)  # no batch of the base data fails
    for row, (x_new, y_new) in itertools.product((0, 250, 479), [(3.0, 1.0), (-3.0, 1.0), (np.inf, 1.0), (0.5, 7.0)]):
        X2, y2 = X.copy(), y.copy()
        X2[row, 1], y2[row] = x_new, y_new
        b = partition_models(X2, y2, BINARY_M, np.random.default_rng(9), fit)
        assert np.all(np.isfinite(b))
        assert np.sum(np.any(a != b, axis=1)) == 1  # bit for bit: no other model moves


def _binary_pairs() -> list[NeighbourPair]:
    X, y = _binary_rows(0)
    box = (-3.0, 3.0)

    def design(Xa: np.ndarray, ya: np.ndarray) -> Design:
        return design_from_arrays(ya, Xa, y_bounds=(0.0, 1.0), x_bounds=[box])

    pairs = []
    for row, (cx, cy) in itertools.product((0, 479), [(-3.0, 1.0), (3.0, 0.0), (3.0, 1.0)]):
        X2, y2 = X.copy(), y.copy()
        X2[row, 1], y2[row] = cx, cy
        pairs.append(NeighbourPair(f"row {row} -> ({cx:g}, {cy:g})", design(X, y), design(X2, y2)))
    return pairs + [p.swapped() for p in pairs]


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_replay_binary_releases_within_their_sensitivity(link: str) -> None:
    """The replay of ``fit(..., link=)``: the distance, the point and the spreads within their declared
    sensitivities, the same releases in the same order on both sides, the outputs equal once forced."""
    report = replay(
        tukey.fit,
        _binary_pairs(),
        PrivacyRequest(TINY_TOTAL, TINY_DELTA),
        seeds=range(3),
        options={"m": BINARY_M, "link": link},
    )
    report.assert_sound(min_ratio=0.9)  # measured: every release reaches 1.0, no violation
    assert {tukey.DISTANCE, tukey.SAMPLE, tukey_inference.spread_name(1)} <= set(report.releases)
