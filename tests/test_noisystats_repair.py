"""NoisyStats with ``singular="repair"`` (dpstats/mechanisms/noisystats/repair.py): never fails, post-processing only.

What is tested: the option's validation; the floor is the stated quantile of
the noise's spectral norm (checked against an independent simulation) and the
repair raises exactly the eigenvalues below it; a by-hand replay (the repaired
slopes are the solve of the released matrix repaired by hand, and the
intercept's release reads those slopes); the replay audits with the option
(every release within its declared sensitivity, and once the noisy releases
are forced the final release is the same on neighbours: a function of the
released statistics only) on the centred, structured and through-the-origin
paths and the grouped batch; it never fails on a seeded d = 10, n = 1000,
eps = 1 design where the paper's mechanism fails in most runs, and its
standard errors are finite there; the standard errors' bootstrap refits go
through the same repair; auto picks it where the paper's mechanism is
predicted to fail. Everything is seeded, so deterministic; the one
statistical check (the floor's coverage) states its false-failure rate.
The replays and the many-seed fits draw 100 bootstrap replicates instead of
1,000 (``few_replicates``): the refits are post-processing of the releases,
drawn and repaired by the same code whatever their number.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.audit import corner_pairs, design_from_arrays, pair_from_points, replay
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import REGISTRY
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.noisystats import inference, repair
from dpstats.mechanisms.noisystats import mechanism as noisystats
from dpstats.mechanisms.noisystats.grouped import fit_groups
from dpstats.planning.candidates import CANDIDATES
from dpstats.planning.facts import PublicFacts
from dpstats.planning.selection import choose
from dpstats.privacy import noise

REPAIR = {"singular": "repair"}
UNIT = [(0.0, 1.0)]


def _uniform_design(n: int, d: int, seed: int):
    """bench_auto's d-regressor design: x uniform around 0.5 (variance 0.05), y = 0.2 + mean(x)/2 + noise."""
    rng = np.random.default_rng(seed)
    half = np.sqrt(3 * 0.05)
    x = rng.uniform(0.5 - half, 0.5 + half, (n, d))
    y = np.clip(0.2 + 0.5 * x.mean(axis=1) + rng.normal(0, 0.1, n), 0, 1)
    return design_from_arrays(y, np.column_stack([np.ones(n), x]), y_bounds=(0, 1), x_bounds=UNIT * d)


def test_the_option_is_validated_and_defaults_to_the_paper() -> None:
    assert REGISTRY["noisystats"].check_options({}) == {"singular": "fail"}
    design = _uniform_design(50, 2, 0)
    for bad in ("Repair", "ridge", None, 1):
        with pytest.raises(ValueError, match="singular must be one of"):
            noisystats.fit(design, PrivacyRequest(eps=1.0), np.random.default_rng(0), singular=bad)
    frame = pd.DataFrame({"x": [0.1, 0.5, 0.9] * 10, "y": [0.2, 0.4, 0.7] * 10})
    with pytest.raises(ValueError, match="singular must be one of"):
        dpstats.dp_ols("y ~ x", frame, eps=1.0, bounds={"x": (0, 1), "y": (0, 1)}, method="noisystats", singular="x")


@pytest.mark.parametrize("size", [1, 3])
def test_the_floor_is_the_stated_quantile_of_the_noise_norm(size: int) -> None:
    """20,000 independent noise matrices: the share with norm <= the floor is LEVEL within 0.02.

    The floor's own Monte Carlo error (4,000 draws) gives the share an sd of
    about 0.0035, the check's draws 0.0015: 0.02 is over 5 sd (< 1e-6).
    """
    scale = 2.5
    rows, cols = repair.upper_pattern(size)
    E = repair.noise_matrices(np.random.default_rng(77), scale, size, rows, cols, 20_000)
    share = np.mean(repair.spectral_norms(E) <= repair.floor(size, scale))
    assert abs(share - repair.LEVEL) <= 0.02
    if size == 1:  # |Laplace(b)| is exponential: its LEVEL quantile is -b log(1 - LEVEL)
        assert repair.floor(1, scale) == pytest.approx(-scale * np.log(1 - repair.LEVEL), rel=0.05)


def test_the_repair_raises_exactly_the_eigenvalues_below_the_floor() -> None:
    """Deterministic: same eigenvectors; eigenvalues max(l, floor); a stack is repaired matrix by matrix."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    A = A + A.T
    values, vectors = np.linalg.eigh(A)
    bound = float(np.median(values))
    fixed = repair.repaired(A, bound)
    np.testing.assert_allclose(np.linalg.eigvalsh(fixed), np.maximum(values, bound), atol=1e-12)
    np.testing.assert_allclose(fixed @ vectors, vectors * np.maximum(values, bound), atol=1e-12)
    stack = np.stack([A, 2 * A])
    np.testing.assert_allclose(repair.repaired(stack, bound)[1], repair.repaired(2 * A, bound), atol=1e-12)
    definite = A @ A.T + np.eye(4)
    assert np.allclose(repair.repaired(definite, 0.5), definite)  # nothing below the floor: unchanged


def test_the_repaired_estimate_is_the_released_matrix_repaired_by_hand() -> None:
    """Deterministic: 20 seeds at n = 40, three regressors, eps = 1 (the noisy S_xx is indefinite in most)."""
    design = _uniform_design(40, 3, 1)
    p, n = 3, 40
    x, y = design.X[:, 1:], design.y
    repaired_ones = 0
    for seed in range(20):
        with noise.recording() as log:
            release = noisystats.fit(design, PrivacyRequest(eps=1.0, se_share=0), np.random.default_rng(seed), **REPAIR)
        released = {r.name: r for r in log}
        s_xy = np.asarray(released["ncov(x, y)"].noisy)
        s_xx = np.zeros((p, p))
        s_xx[np.triu_indices(p)] = released["nvar(x)"].noisy
        s_xx = s_xx + np.triu(s_xx, 1).T
        scale = released["nvar(x)"].sensitivity / released["nvar(x)"].eps
        values, vectors = np.linalg.eigh(s_xx)
        repaired_ones += values[0] < repair.floor(p, scale)
        by_hand = vectors @ np.diag(np.maximum(values, repair.floor(p, scale))) @ vectors.T
        slopes = np.linalg.solve(by_hand, s_xy)
        assert not release.failed
        np.testing.assert_allclose(release.params[1:], slopes, rtol=1e-10, atol=1e-14)
        intercept = released["intercept"]
        assert float(intercept.value) == pytest.approx(y.mean() - slopes @ x.mean(axis=0), rel=1e-12)
        assert intercept.sensitivity == pytest.approx((1 + np.abs(slopes).sum()) / n, rel=1e-12)
        assert release.params[0] == pytest.approx(float(intercept.noisy), rel=1e-12)
    assert repaired_ones >= 15


def _structured_pairs():
    """Rows with a 3-level factor (2 dummies), x and y at 0 or 1; the last row moves between corners."""
    levels = np.vstack([np.zeros(2), np.eye(2)])
    corners = [np.r_[level, x, y] for level in levels for x in (0, 1) for y in (0, 1)]
    base = np.array([np.r_[level, k % 2, (k // 2) % 2] for level in levels for k in range(3)] + [np.zeros(4)])
    pairs = []
    for a in corners[::2]:
        for b in corners[1::2]:
            d, d_prime = base.copy(), base.copy()
            d[-1], d_prime[-1] = a, b
            pair = pair_from_points(d, d_prime, UNIT * 3, (0.0, 1.0), label=f"{a} -> {b}")
            blocks = {"one_hot_blocks": ((1, 2),)}
            pairs.append(
                dataclasses.replace(
                    pair, d=dataclasses.replace(pair.d, **blocks), d_prime=dataclasses.replace(pair.d_prime, **blocks)
                )
            )
    return pairs


@pytest.mark.usefixtures("few_replicates")
@pytest.mark.parametrize(
    "pairs",
    [
        pytest.param(lambda: corner_pairs(10, UNIT, (0.0, 1.0)), id="one regressor"),
        pytest.param(lambda: corner_pairs(8, UNIT * 3, (0.0, 1.0), bases="lowest"), id="three regressors"),
        pytest.param(
            lambda: corner_pairs(8, [(0.0, 2.0), (0.5, 1.0)], (0.0, 3.0), intercept=False, bases="lowest"),
            id="through the origin",
        ),
        pytest.param(_structured_pairs, id="structured"),
    ],
)
@pytest.mark.parametrize("share", [0.0, None])
def test_replay_with_the_repair_is_sound_and_a_function_of_the_releases(pairs, share) -> None:
    """Deterministic: every release within its declared sensitivity; with the noisy releases forced to D's,
    the final release (estimates, standard errors, replicates) is the same on D' (``check_outputs``)."""
    report = replay(noisystats.fit, pairs(), PrivacyRequest(eps=1.0, se_share=share), seeds=range(2), options=REPAIR)
    report.assert_sound(min_ratio=None)


@pytest.mark.usefixtures("few_replicates")
def test_grouped_batch_repairs_every_group_and_replays_soundly() -> None:
    """Deterministic: 12 groups of 40 rows with ten regressors at eps = 1: the paper's batch fails in most
    groups, the repaired one in none; the replay of a moved row is sound with the repair."""
    design = _uniform_design(480, 10, 4)
    sizes = np.full(12, 40)
    request = PrivacyRequest(eps=1.0, se_share=0)
    plain = fit_groups(design, sizes, request, np.random.default_rng(0))
    fixed = fit_groups(design, sizes, request, np.random.default_rng(0), singular="repair")
    assert sum(r.failed for r in plain) >= 9
    assert not any(r.failed for r in fixed) and all(np.all(np.isfinite(r.params)) for r in fixed)
    for a, b in zip(plain, fixed, strict=True):  # the released statistics are the same draws
        np.testing.assert_array_equal(a.noisy_stats["nvar(x)"], b.noisy_stats["nvar(x)"])

    def batch(design, privacy, rng, singular="fail"):
        return fit_groups(design, np.array([5, 5]), privacy, rng, singular=singular)[0]

    pairs = corner_pairs(10, UNIT * 2, (0.0, 1.0), bases="lowest")
    replay(batch, pairs, request, seeds=range(2), options=REPAIR).assert_sound(min_ratio=None)


@pytest.mark.usefixtures("few_replicates")
def test_never_fails_on_ten_regressors_where_the_paper_fails() -> None:
    """Deterministic: d = 10, n = 1000, eps = 1 (bench_auto's cell), default se_share, 30 seeds."""
    design = _uniform_design(1000, 10, 5)
    fails, repaired = 0, []
    for seed in range(30):
        request = PrivacyRequest(eps=1.0)
        fails += noisystats.fit(design, request, np.random.default_rng(seed)).failed
        repaired.append(noisystats.fit(design, request, np.random.default_rng(seed), **REPAIR))
    assert fails >= 25
    assert not any(r.failed for r in repaired)
    assert all(np.all(np.isfinite(r.params)) for r in repaired)
    assert sum(np.all(np.isfinite(np.diag(r.cov))) for r in repaired) >= 25
    assert all(r.replicates is None or np.all(np.isfinite(r.replicates)) for r in repaired)


@pytest.mark.usefixtures("few_replicates")
@pytest.mark.parametrize(
    "formula, bounds, levels",
    [
        ("y ~ x + C(g)", {"x": (0, 1), "y": (0, 1)}, {"g": list(range(20))}),
        ("y ~ x + z - 1", {"x": (0, 1), "z": (0, 1), "y": (0, 1)}, None),
    ],
    ids=["structured", "through the origin"],
)
def test_the_structured_and_no_intercept_paths_never_fail(formula: str, bounds, levels) -> None:
    """Deterministic: small n at eps = 0.5, where the paper's mechanism fails in some of 20 seeds."""
    rng = np.random.default_rng(6)
    n = 200
    frame = pd.DataFrame({"x": rng.uniform(0, 1, n), "z": rng.uniform(0, 1, n), "g": rng.integers(20, size=n)})
    frame["y"] = np.clip(0.3 + 0.4 * frame["x"] + rng.normal(0, 0.1, n), 0, 1)
    design, _ = build_design(formula, frame, bounds, levels)
    plain = [noisystats.fit(design, PrivacyRequest(eps=0.5), np.random.default_rng(s)) for s in range(20)]
    fixed = [noisystats.fit(design, PrivacyRequest(eps=0.5), np.random.default_rng(s), **REPAIR) for s in range(20)]
    assert any(r.failed for r in plain)
    assert not any(r.failed for r in fixed) and all(np.all(np.isfinite(r.params)) for r in fixed)


def test_bootstrap_refits_go_through_the_same_repair() -> None:
    """Deterministic: with a floor every refit is finite and is the solve of the repaired noisy matrix."""
    s_xx = np.diag([1.0, 0.2, 0.05])
    targets = np.tile([0.1, -0.2, 0.3], (500, 1))
    scales = (0.5, 0.1)
    without = inference._noisy_solve(np.random.default_rng(8), s_xx, targets, scales, None)
    floor = repair.floor(3, scales[0])
    fixed = inference._noisy_solve(np.random.default_rng(8), s_xx, targets, scales, floor)
    assert np.isnan(without).any() and np.all(np.isfinite(fixed))
    rng = np.random.default_rng(8)
    E = repair.noise_matrices(rng, scales[0], 3, *repair.upper_pattern(3), 500)
    rhs = targets @ s_xx + noise.laplace(rng, scales[1], (500, 3))
    expected = np.stack([np.linalg.solve(repair.repaired(s_xx + e, floor), r) for e, r in zip(E, rhs, strict=True)])
    np.testing.assert_allclose(fixed, expected, rtol=1e-9, atol=1e-12)
    ok = ~np.isnan(without[:, 0])
    definite_and_clear = ok & (np.linalg.eigvalsh(s_xx + E)[:, 0] >= floor)
    np.testing.assert_allclose(fixed[definite_and_clear], without[definite_and_clear], rtol=1e-9)


def test_auto_runs_the_repair_where_the_paper_is_predicted_to_fail() -> None:
    """Deterministic: ten regressors, n = 1000, eps = 1 (every bound [0, 1]): auto configures the repair."""
    design = _uniform_design(1000, 10, 9)
    choice = choose(PublicFacts.of(design, 1.0, 0.0, "ols"))
    assert (choice.method, choice.options) == ("noisystats", REPAIR)
    frame = pd.DataFrame(design.X[:, 1:], columns=[f"x{j}" for j in range(1, 11)]).assign(y=design.y)
    bounds = {c: (0, 1) for c in frame.columns}
    res = dpstats.dp_ols("y ~ " + " + ".join(frame.columns[:-1]), frame, eps=1.0, bounds=bounds, random_state=2)
    assert res.method == "noisystats" and not res.failed


def test_the_repaired_candidate_applies_with_categorical_terms_of_any_number_of_levels() -> None:
    """Deterministic: the structured release's noise does not grow with the levels, so the repaired candidate is
    calibrated on ``y ~ x + C(g)`` (dpstats/planning/candidates.py) and applies whatever the number of levels."""
    repaired = next(c for c in CANDIDATES if c.label == "noisystats (repaired)")
    bounds = {"x": (0, 1), "y": (0, 1)}
    for levels in (["a", "b"], ["a", "b", "c"], [f"l{k}" for k in range(30)]):
        frame = pd.DataFrame({"x": [0.0, 1.0, 0.5], "g": levels[:3] if len(levels) > 2 else ["a", "b", "a"]})
        frame["y"] = frame["x"]
        design, _ = build_design("y ~ x + C(g)", frame, bounds, {"g": levels})
        facts = PublicFacts.of(design, 1.0, 0.0, "ols")
        assert repaired.refusal(facts) is None
        assert repaired.dimension(facts) == 2.0  # x and the factor's one block, whatever its levels


def test_a_repair_that_binds_names_its_shrinkage_and_one_that_does_not_is_ok() -> None:
    """x and x**2 at n = 300, eps = 1: the noise floor lifts the near-collinear direction (the estimate is shrunk
    along it, and the bootstrap, built on the repaired matrix, repeats that); at eps = 1e4 nothing is lifted."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 300)
    data = pd.DataFrame({"x": x, "y": np.clip(x + x**2 + rng.normal(0, 0.2, x.size), -1, 3)})
    common = dict(bounds={"x": (0, 1), "y": (-1, 3)}, method="noisystats", singular="repair", random_state=1)
    lifted = dpstats.dp_ols("y ~ x + I(x**2)", data, eps=1.0, **common)
    assert lifted.status == "biased" and lifted.bias_source.startswith("the repair's shrinkage: 1 eigenvalue")
    assert dpstats.dp_ols("y ~ x + I(x**2)", data, eps=1e4, **common).status == "ok"
    matrix = np.diag([5.0, 0.1])
    assert repair.floor_bias(matrix, 0.05) is None and "1 eigenvalue" in repair.floor_bias(matrix, 0.2)
