"""DP Newton's method for dp_logit / dp_probit (dpstats/mechanisms/newton/): sensitivities by brute force, the
replay audit of every release (the marginal effects' included), the limit against statsmodels, coverage."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import special

import dpstats
from dpstats.api.binary_release import binary_release
from dpstats.audit.neighbours import pair_from_points
from dpstats.audit.replay import replay
from dpstats.glm.links import get_link
from dpstats.mechanisms import PrivacyRequest, get_mechanism
from dpstats.mechanisms.newton.steps import curvature_rows, curvature_sensitivity, score_rows, score_sensitivity

FAIR = "I(affairs > 0) ~ rate_marriage + age + yrs_married + children + religious + educ"
FAIR_BOUNDS = {"rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0.5, 23), "children": (0, 5.5),
               "religious": (1, 4), "educ": (9, 20)}  # fmt: skip


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_score_and_curvature_sensitivities_hold_over_the_box_corners(name):
    """Every pair of corner rows (outcomes 0 and 1 and a fraction) at random iterates moves the score sum and the
    curvature's upper triangle by at most the declared L1 sensitivities; the score's bound is attained (in the limit
    of an iterate that puts one row's fitted probability at 0 and the other's at 1)."""
    link = get_link(name)
    p = 4
    corners = np.array([[1.0, *c] for c in itertools.product([-1.0, 1.0], repeat=p - 1)])
    near = np.array([[1.0, 1.0, 1.0, 0.98]])  # with the corner (1, 1, 1, 1): the supremum's approach below
    rows = np.repeat(np.vstack([corners, near]), 3, axis=0)
    y = np.tile([0.0, 1.0, 0.3], len(corners) + 1)
    upper = np.triu_indices(p)
    worst_score = worst_curvature = 0.0
    # the sup 2cp is approached, not attained: the near row with y = 1 at index -10, the corner with y = 0 at +10
    extreme = np.array([[-990.0, 0.0, 0.0, 1000.0]])
    for theta in np.vstack([extreme, np.random.default_rng(0).normal(scale=3.0, size=(60, p))]):
        scores = score_rows(link, rows, y, theta)
        worst_score = max(worst_score, np.abs(scores[:, None] - scores[None]).sum(axis=2).max())
        terms = curvature_rows(link, rows, y, theta)[:, None] * (rows[:, :, None] * rows[:, None, :])[:, *upper]
        worst_curvature = max(worst_curvature, np.abs(terms[:, None] - terms[None]).sum(axis=2).max())
    assert worst_score <= score_sensitivity(link, p, ()) + 1e-12
    assert worst_score >= 0.95 * score_sensitivity(link, p, ())
    assert worst_curvature <= curvature_sensitivity(link, p) + 1e-12


def test_a_one_hot_block_moves_the_score_by_two_c_in_all():
    link = get_link("logit")
    rows = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1], [1, 0, 0, 0]], dtype=float)
    for theta in np.random.default_rng(1).normal(scale=3.0, size=(50, 4)):
        scores = score_rows(link, np.repeat(rows, 2, axis=0), np.tile([0.0, 1.0], 4), theta)
        assert np.abs(scores[:, None] - scores[None]).sum(axis=2).max() <= score_sensitivity(link, 4, ((1, 2, 3),))
    assert score_sensitivity(link, 4, ((1, 2, 3),)) == 4.0


def _pairs(n: int = 12) -> list:
    """Neighbours that differ in one row moved between the box's opposite corners and outcomes."""
    rng = np.random.default_rng(2)
    base = np.column_stack([rng.uniform(0, 2, n), rng.uniform(-1, 1, n), rng.integers(0, 2, n).astype(float)])
    pairs = []
    for old, new in [((0.0, -1.0, 0.0), (2.0, 1.0, 1.0)), ((2.0, -1.0, 1.0), (0.0, 1.0, 0.0))]:
        a, b = base.copy(), base.copy()
        a[0], b[0] = old, new
        pairs.append(pair_from_points(a, b, [(0, 2), (-1, 1)], (0, 1), label=f"{old}->{new}"))
    return pairs


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_replay_audit_of_the_whole_binary_release(name):
    """Each release (the Gram bound, the scores, the curvature, the marginal effects' averages) stays within its
    declared sensitivity on neighbours, with the same branches: everything else is post-processing."""
    spec = get_mechanism("newton", name)

    def release(design, privacy, rng, **options):
        return binary_release(spec, design, privacy, rng, options, name, 0.05)[0]

    report = replay(release, _pairs(), PrivacyRequest(eps=1.0), seeds=range(2), options={"steps": 3})
    assert not report.violations, report.as_text()
    assert {"newton score", "newton curvature", "margins"} <= set(report.releases)


@pytest.mark.parametrize(("function", "model"), [(dpstats.dp_logit, sm.Logit), (dpstats.dp_probit, sm.Probit)])
def test_at_a_huge_eps_newton_is_statsmodels_on_fair(function, model):
    data = sm.datasets.fair.load_pandas().data
    res = function(FAIR, data, eps=1e9, bounds=FAIR_BOUNDS, method="newton", random_state=0)
    frame = data.assign(any=(data["affairs"] > 0).astype(float))
    fitted = model.from_formula(FAIR.replace("I(affairs > 0)", "any"), frame).fit(disp=0)
    np.testing.assert_allclose(res.params.to_numpy(), fitted.params.to_numpy(), rtol=0.02)
    np.testing.assert_allclose(res.bse.to_numpy(), fitted.bse.to_numpy(), rtol=0.02)
    assert res.privacy.proven and res.privacy.eps <= 1e9
    margins = res.get_margeff().summary_frame()
    np.testing.assert_allclose(margins["dy/dx"], fitted.get_margeff().margeff, rtol=0.02)


def test_coverage_on_simulated_logits():
    """100 simulated logits (n = 20,000, base rate about 0.2, eps = 2): the 95% intervals cover the truth in
    [0.88, 1.0] (with coverage 0.95 the chance of fewer than 88 of 100 is about 0.3%)."""
    truth = np.array([-2.0, 1.0, -0.5, 0.8])
    covered = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        n = 20_000
        frame = pd.DataFrame({"x1": rng.uniform(0, 1, n), "x2": rng.normal(0, 1, n).clip(-3, 3),
                              "x3": rng.integers(0, 2, n)})  # fmt: skip
        eta = truth[0] + truth[1] * frame.x1 + truth[2] * frame.x2 + truth[3] * frame.x3
        frame["y"] = (rng.uniform(size=n) < special.expit(eta)).astype(float)
        res = dpstats.dp_logit("y ~ x1 + x2 + x3", frame, eps=2.0, method="newton", random_state=seed,
                               bounds={"x1": (0, 1), "x2": (-3, 3), "x3": (0, 1)}, margins_share=0)  # fmt: skip
        ci = res.conf_int().to_numpy()
        covered.append((ci[1, 0] <= truth[1]) & (truth[1] <= ci[1, 1]))
    assert 0.88 <= np.mean(covered) <= 1.0
