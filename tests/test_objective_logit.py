"""Objective perturbation for logit and probit (dpstats/mechanisms/objective/; Chaudhuri, Monteleoni & Sarwate
2011, Algorithm 2).

1. Calibration: Algorithm 2's Delta and beta in both branches; the norm of b is Gamma(p, 1/beta).
2. The proof's sensitivity by brute force: for random and corner replace-one neighbours, random noise b and the
   minimiser f on D, the noise b' that makes f the minimiser on D' (first-order condition) differs from b by at
   most 2, and minimising on D' with b' gives f back; the bound is nearly attained.
3. The information matrix's entry widths by brute force (one-hot blocks included).
4. Replay on corner neighbours (dpstats/audit/replay.py): sound, the information release at its bound.
5. Limits: at eps = 1e9 the fit is statsmodels' Logit and Probit on fair within 2%.
6. Coverage of 200 seeded simulated logits (base rate ~10%, 3 regressors) in [0.9, 0.99].
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import special, stats

from dpstats.audit import corner_pairs, replay
from dpstats.audit.neighbours import design_from_arrays
from dpstats.frontend.formula import build_design
from dpstats.glm.links import LOGIT, PROBIT
from dpstats.mechanisms import REGISTRY
from dpstats.mechanisms.base import PrivacyRequest
from dpstats.mechanisms.objective import inference, sampler, solver
from dpstats.mechanisms.objective.calibration import calibrate
from dpstats.mechanisms.objective.losses import IndexLoss
from dpstats.mechanisms.objective.mechanism import fit
from dpstats.mechanisms.objective.scaling import RowScale
from dpstats.privacy.noise import FLOAT_CAVEAT, make_rng

BOUNDS = [(0.0, 10.0), (-2.0, 2.0)]


def _design(rng: np.random.Generator, n: int, link=LOGIT):
    X = np.column_stack([np.ones(n), rng.uniform(0, 10, n), rng.uniform(-2, 2, n)])
    y = (rng.random(n) < link.mean(X @ np.array([-1.0, 0.2, 0.5]))).astype(float)
    return design_from_arrays(y, X, y_bounds=(0.0, 1.0), x_bounds=BOUNDS)


def test_registered_pure_and_options():
    spec = REGISTRY["objective"]
    assert spec.estimators == {"logit", "probit"} and spec.needs_bounds and not spec.needs_delta
    options = spec.check_options({})
    spec.check_privacy(PrivacyRequest(eps=1.0), options)
    with pytest.raises(ValueError, match="pure DP"):
        spec.check_privacy(PrivacyRequest(eps=1.0, delta=1e-6), options)
    with pytest.raises(ValueError, match="rho"):
        spec.check_privacy(PrivacyRequest(eps=None, rho=0.5), options)
    with pytest.raises(ValueError, match="regularization"):
        spec.check_privacy(PrivacyRequest(eps=1.0), {**options, "regularization": -1.0})
    assert spec.se_share(100, 3, PrivacyRequest(eps=1.0), options) == 0.2


def test_calibration_is_algorithm_2():
    c, n = 0.25, 1000
    cal = calibrate(1.0, n, c)  # no regulariser: the second branch
    assert cal.delta == pytest.approx(c / (n * math.expm1(0.25)))
    assert cal.beta == pytest.approx(0.25) and cal.ridge == cal.delta
    strong = calibrate(1.0, n, c, regularization=0.01)  # eps' = 1 - 2 log(1 + 0.025) > 0: no Delta
    assert strong.delta == 0.0 and strong.beta == pytest.approx((1.0 - 2.0 * math.log1p(c / (n * 0.01))) / 2.0)
    weak = calibrate(1.0, n, c, regularization=1e-5)  # eps' <= 0: Delta tops the ridge up
    assert weak.ridge == pytest.approx(c / (n * math.expm1(0.25))) and weak.beta == pytest.approx(0.25)


def test_noise_norm_is_gamma():
    # KS test of ||b|| against Gamma(p, 1/beta), seeded: false-failure rate 1e-3 at a fresh seed.
    b = sampler.perturbation(make_rng(3), 4, 0.5, size=20_000)
    assert stats.kstest(np.linalg.norm(b, axis=1), stats.gamma(4, scale=2.0).cdf).pvalue > 1e-3
    assert np.mean(b**2, axis=0) == pytest.approx(np.full(4, sampler.second_moment(4, 0.5)), rel=0.05)


def _scaled(design):
    scale = RowScale.from_design(design)
    return scale.transform(design.X), np.asarray(design.y, dtype=float)


@pytest.mark.parametrize("link", [LOGIT, PROBIT], ids=["logit", "probit"])
def test_first_order_sensitivity_by_brute_force(link):
    """||b - b'|| <= 2 where b' makes the same f the minimiser on the neighbour (calibration.py's proof)."""
    loss = IndexLoss.of(link, 5.0)
    rng = np.random.default_rng(7)
    corners = np.array(list(itertools.product([0.0, 10.0], [-2.0, 2.0], [0.0, 1.0])))
    worst = 0.0
    for trial in range(60):
        n = 20
        design = _design(rng, n, link)
        X, y = _scaled(design)
        ridge = n * calibrate(0.5 + trial % 3, n, loss.smoothness).ridge
        b = sampler.perturbation(make_rng(trial), 3, 0.05 + 0.1 * (trial % 4))
        f = solver.minimise(loss, X, y, ridge, b)
        assert np.all(np.isfinite(f))
        row = corners[rng.integers(len(corners))] if trial % 2 else np.r_[rng.uniform(0, 10), rng.uniform(-2, 2), 1.0]
        Xp, yp = design.X.copy(), design.y.copy()
        Xp[-1], yp[-1] = [1.0, row[0], row[1]], row[2]
        X2, y2 = _scaled(replace(design, X=Xp, y=yp))
        b_prime = -(solver.gradient(loss, X2, y2, f) + ridge * f)
        gap = float(np.linalg.norm(b - b_prime))
        assert gap <= 2.0 + 1e-9
        worst = max(worst, gap)
        assert np.allclose(solver.minimise(loss, X2, y2, ridge, b_prime), f, atol=1e-7)
    # the bound at arbitrary f (the proof's claim for every f): far-out f saturates |l'| at 1
    for _ in range(200):
        design = _design(rng, 5, link)
        X, y = _scaled(design)
        f = rng.normal(0, 30, 3)
        i, j = rng.integers(len(corners), size=2)
        X1, X2 = X.copy(), X.copy()
        y1, y2 = y.copy(), y.copy()
        scale = RowScale.from_design(design)
        X1[-1] = scale.transform(np.array([[1.0, *corners[i][:2]]]))[0]
        X2[-1] = scale.transform(np.array([[1.0, *corners[j][:2]]]))[0]
        y1[-1], y2[-1] = corners[i][2], corners[j][2]
        gap = float(np.linalg.norm(solver.gradient(loss, X1, y1, f) - solver.gradient(loss, X2, y2, f)))
        assert gap <= 2.0 + 1e-9
        worst = max(worst, gap)
    assert worst > 1.5  # the bound is nearly attained (corner rows of norm 1 with |l'| -> 1)


def test_information_widths_by_brute_force():
    rng = np.random.default_rng(11)
    x_bounds = [(0.0, 10.0), (-2.0, 2.0), (0.0, 1.0), (0.0, 1.0)]
    for link, blocks in ((LOGIT, ()), (PROBIT, ((3, 4),))):
        X = np.column_stack([np.ones(4), np.zeros((4, 4))])
        design = replace(
            design_from_arrays(np.zeros(4), X, y_bounds=(0.0, 1.0), x_bounds=x_bounds), one_hot_blocks=blocks
        )
        scale = RowScale.from_design(design)
        widths = inference.entry_widths(scale, scale.column_bounds(design.x_bounds), link)
        worst = np.zeros_like(widths)
        for _ in range(1500):
            rows = np.column_stack(
                [np.ones(2), rng.choice([0, 10], 2), rng.choice([-2, 2], 2), rng.integers(0, 2, (2, 2))]
            )
            if blocks:
                rows[:, 4] *= 1 - rows[:, 3]
            Xs = scale.transform(rows)
            assert np.all(np.linalg.norm(Xs, axis=1) <= 1 + 1e-12)
            f = rng.normal(0, 0.3, 5)
            a, b = inference.information(link, Xs[:1], f), inference.information(link, Xs[1:], np.zeros(5))
            worst = np.maximum(worst, np.abs(a - b))
        assert np.all(worst <= widths + 1e-12)
        assert worst.sum() > 0.6 * widths.sum()


def test_replay_on_corner_pairs():
    """Sound on every corner move (one regressor, n = 6). The worst ratios (measured 0.53 and 0.75) stay below 1
    because the bounds are reached only at particular released f: |l'| -> 1 far out, Fisher's weight 1/4 at a zero
    index; the brute-force tests above show both bounds nearly attained. The recorded utility is ||b||, whose
    change is at most ||b - b'||."""
    pairs = corner_pairs(6, [(0.0, 10.0)], (0.0, 1.0), bases="all")
    report = replay(fit, pairs, PrivacyRequest(eps=0.5), seeds=range(3), options={"link": "logit"})
    report.assert_sound(min_ratio=None)
    assert report.ratio("objective information") > 0.7
    assert report.ratio("objective perturbation") > 0.5
    probit = replay(fit, pairs[::4], PrivacyRequest(eps=0.5), seeds=range(1), options={"link": "probit"})
    probit.assert_sound(min_ratio=None)


def test_release_is_marked_not_float_safe_and_failure_is_an_output():
    design = _design(np.random.default_rng(1), 400)
    release = fit(design, PrivacyRequest(eps=1.0), make_rng(0), link="logit")
    assert not release.privacy.proven and FLOAT_CAVEAT in release.privacy.caveats
    assert release.privacy.eps == 1.0 and dict(release.privacy.split)["information matrix"] == pytest.approx(0.2)
    assert np.all(np.isfinite(release.cov))
    separated = replace(design, y=(design.X[:, 1] > 5).astype(float))
    failed = fit(separated, PrivacyRequest(eps=1e9, se_share=0.0), make_rng(0), link="logit")
    assert failed.failed and np.all(np.isnan(failed.params))


FAIR_BOUNDS = {
    "rate_marriage": (1, 5),
    "age": (17.5, 42),
    "yrs_married": (0.5, 23),
    "children": (0, 5.5),
    "religious": (1, 4),
    "educ": (9, 20),
    "affairs": (0, 60),
}
RHS = "rate_marriage + age + yrs_married + children + religious + educ"


@pytest.mark.parametrize("link,model", [("logit", smf.logit), ("probit", smf.probit)])
def test_limit_matches_statsmodels_on_fair(link, model):
    """At eps = 1e9 Delta underflows to 0 and ||b|| ~ 1e-8: the estimand gap is gone."""
    data = sm.datasets.fair.load_pandas().data
    design, _ = build_design(f"I(affairs > 0) ~ {RHS}", data, FAIR_BOUNDS, None, binary=True)
    reference = model(f"aff ~ {RHS}", data.assign(aff=(data.affairs > 0).astype(float))).fit(disp=0)
    release = fit(design, PrivacyRequest(eps=1e9), make_rng(0), link=link)
    assert np.allclose(release.params, reference.params.to_numpy(), rtol=0.02, atol=0)
    assert np.allclose(np.sqrt(np.diag(release.cov)), reference.bse.to_numpy(), rtol=0.05)
    assert release.bias is None


def test_coverage_of_simulated_logits():
    """200 seeded logits, n = 10,000, eps = 5, base rate ~10%, 3 regressors: pooled coverage of the 800 intervals.
    Measured 0.96 (benchmarks/bench_objective_coverage.py); [0.9, 0.99] is about 4 SEs either side of 0.95 for 200
    replications of correlated intervals: false-failure rate below 1e-3."""
    truth = np.array([-2.6, 0.5, -0.5, 0.25])
    covered = []
    for r in range(200):
        g = np.random.default_rng(r)
        X = np.column_stack([np.ones(10_000), np.clip(g.standard_normal((10_000, 3)), -3, 3)])
        y = (g.random(10_000) < special.expit(X @ truth)).astype(float)
        design = design_from_arrays(y, X, y_bounds=(0.0, 1.0), x_bounds=[(-3.0, 3.0)] * 3)
        release = fit(design, PrivacyRequest(eps=5.0), make_rng(1000 + r), link="logit")
        covered.append(np.abs(release.params - truth) <= 1.96 * np.sqrt(np.diag(release.cov)))
    assert 0.9 <= float(np.mean(covered)) <= 0.99
