"""Survey weights in dp_logit / dp_probit (``weights=``, dpstats/frontend/weights.py; DP Newton's weighted release):
the weighted MLE with design-based SEs at the limit, the weights' row-wise treatment, the public refusals, the
weighted sensitivities by brute force, and a replay audit in which a row's weight moves from 0 to its maximum,
with a canary that ignores the weight."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import special

import dpstats
from dpstats.api.binary_release import binary_release
from dpstats.audit.neighbours import NeighbourPair, pair_from_points
from dpstats.audit.replay import replay
from dpstats.glm.links import get_link
from dpstats.mechanisms import PrivacyRequest, get_mechanism
from dpstats.mechanisms.newton import steps
from dpstats.mechanisms.newton.steps import (
    curvature_rows,
    curvature_sensitivity,
    score_bound,
    score_clip,
    score_rows,
    score_sensitivity,
)
from dpstats.uncertainty.design_meat import row_meat_sensitivity

BOUNDS = {"x": (0, 1), "z": (-2, 2), "wt": (0, 60)}


def _survey(seed: int = 0, n: int = 20_000, link: str = "logit") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x, z, w = rng.uniform(0, 1, n), rng.normal(0, 1, n).clip(-2, 2), rng.uniform(1, 50, n)
    eta = -1 + 1.5 * x - 0.7 * z
    mean = special.expit(eta) if link == "logit" else special.ndtr(eta)
    return pd.DataFrame({"y": (rng.uniform(size=n) < mean).astype(float), "x": x, "z": z, "wt": w})


@pytest.mark.parametrize(
    ("link", "family"), [("logit", sm.families.links.Logit()), ("probit", sm.families.links.Probit())]
)
def test_at_a_huge_eps_the_weighted_fit_is_the_weighted_mle_with_its_sandwich(link, family):
    """survey::svyglm's point estimate is the weighted MLE, its SE without clusters the weighted sandwich (HC0 up to
    its n / (n - 1)): statsmodels' GLM with var_weights and cov_type="HC0" is both."""
    data = _survey(1, link=link)
    fit = dpstats.dp_logit if link == "logit" else dpstats.dp_probit
    res = fit("y ~ x + z", data, eps=1e9, bounds=BOUNDS, weights="wt", random_state=0)
    ref = sm.GLM(data["y"], sm.add_constant(data[["x", "z"]]), family=sm.families.Binomial(family),
                 var_weights=data["wt"]).fit(cov_type="HC0")  # fmt: skip
    np.testing.assert_allclose(res.params.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(res.bse.to_numpy(), ref.bse.to_numpy(), rtol=1e-3)
    assert res.method == "newton" and res.hyperparameters["weights"] == "wt"
    assert dict(res.privacy.split)["meat"] > 0 and res.privacy.eps <= 1e9


def test_bad_weights_are_treated_row_wise():
    data = _survey(2, 5000).astype({"wt": object})
    data.loc[:5, "wt"] = [np.nan, -3.0, "heavy", np.inf, 1e9, None]
    res = dpstats.dp_logit("y ~ x + z", data, eps=1.0, bounds=BOUNDS, weights="wt", method="newton", random_state=0)
    assert np.all(np.isfinite(res.params))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": "wt", "bounds": {"x": (0, 1), "z": (-2, 2)}}, "needs its range declared"),
        ({"weights": "wt", "bounds": {**BOUNDS, "wt": (-1, 5)}}, "0 <= lower < upper"),
        ({"weights": "w2"}, "not a column"),
        ({"weights": "wt", "method": "objective"}, "does not take survey weights"),
        ({"weights": "wt", "method": "newton", "unit": "x", "max_rows": 2}, "do not combine"),
    ],
)
def test_weights_are_refused_on_public_facts(kwargs, message):
    arguments = {"bounds": BOUNDS, "eps": 1.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        dpstats.dp_logit("y ~ x + z", _survey(3, 200), **arguments)


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_weighted_sensitivities_hold_over_the_box_corners_and_the_weights_ends(name):
    """Rows at the box's corners with outcomes 0, 1 and a fraction and weights 0 or w_max, at random iterates: the
    weighted score, curvature and meat terms move by at most their declared L1 sensitivities."""
    link, p, w_max = get_link(name), 3, 60.0
    corners = np.array([[1.0, *c] for c in itertools.product([-1.0, 1.0], repeat=p - 1)])
    rows = np.repeat(corners, 6, axis=0)
    y = np.tile([0.0, 1.0, 0.3], 2 * len(corners))
    w = np.tile(np.repeat([0.0, w_max], 3), len(corners))
    upper = np.triu_indices(p)
    outer = (rows[:, :, None] * rows[:, None, :])[:, *upper]
    for theta in np.random.default_rng(4).normal(scale=3.0, size=(40, p)):
        score = w[:, None] * score_rows(link, rows, y, theta)
        curvature = (w * curvature_rows(link, rows, y, theta))[:, None] * outer
        c = score_clip(link)
        psi = np.clip(link.score_factor(y, rows @ theta), -c, c)
        meat = np.square(w * psi)[:, None] * outer
        for terms, bound in [
            (score, score_sensitivity(link, p, (), w_max)),
            (curvature, curvature_sensitivity(link, p, w_max)),
            (meat, row_meat_sensitivity(score_bound(link, p, (), w_max))),
        ]:
            assert np.abs(terms[:, None] - terms[None]).sum(axis=2).max() <= bound + 1e-9


def _weighted_pairs() -> list[NeighbourPair]:
    """Neighbours in which row 0's weight moves from 0 to the maximum (and its values between the box's corners)."""
    rng = np.random.default_rng(5)
    n = 12
    base = np.column_stack([rng.uniform(0, 2, n), rng.uniform(-1, 1, n), rng.integers(0, 2, n).astype(float)])
    weights = rng.uniform(1, 10, n)
    pairs = []
    for old, new in [((0.0, -1.0, 0.0), (2.0, 1.0, 1.0)), ((2.0, -1.0, 1.0), (0.0, 1.0, 0.0))]:
        a, b = base.copy(), base.copy()
        a[0], b[0] = old, new
        pair = pair_from_points(a, b, [(0, 2), (-1, 1)], (0, 1), label=f"{old}->{new}")
        light, heavy = weights.copy(), weights.copy()
        light[0], heavy[0] = 0.0, 10.0
        weighted = {"weight_bounds": (0.0, 10.0)}
        pairs.append(NeighbourPair(pair.label, replace(pair.d, weights=light, **weighted),
                                   replace(pair.d_prime, weights=heavy, **weighted)))  # fmt: skip
    return pairs


def _release(name: str):
    spec = get_mechanism("newton", name)

    def release(design, privacy, rng, **options):
        return binary_release(spec, design, privacy, rng, options, name, 0.05)[0]

    return release


@pytest.mark.parametrize("name", ["logit", "probit"])
def test_replay_audit_of_a_weight_moving_from_zero_to_its_maximum(name):
    """Every release (the Gram bound, the scores, the curvatures, the meat, the weighted averages for the marginal
    effects) stays within its declared sensitivity when one row's weight moves from 0 to the range's top."""
    report = replay(_release(name), _weighted_pairs(), PrivacyRequest(eps=1.0), seeds=range(2), options={"steps": 3})
    assert not report.violations, report.as_text()
    assert {"newton score", "newton curvature", "meat", "margins"} <= set(report.releases)


def test_a_canary_that_ignores_the_weights_is_flagged_by_the_replay():
    """The score's sensitivity computed as if every weight were at most 1: the replay flags it (deterministic)."""

    def ignoring(link, p, blocks, weight_max=1.0):
        return 2.0 * score_clip(link) * (p - sum(len(b) for b in blocks) + len(blocks))

    with mock.patch.object(steps, "score_sensitivity", ignoring):
        report = replay(_release("logit"), _weighted_pairs(), PrivacyRequest(eps=1.0), seeds=range(1),
                        options={"steps": 3})  # fmt: skip
    assert any("newton score" in str(v) for v in report.violations)


def test_the_cli_fits_a_weighted_logit_as_python_does(tmp_path, capsys):
    """``dpstats logit --weights wt`` releases what ``dp_logit(..., weights="wt")`` does with the same seed."""
    from dpstats.cli import main

    data = _survey(6, 3000)
    path = tmp_path / "survey.csv"
    data.to_csv(path, index=False)
    args = [
        "logit",
        "y ~ x + z",
        "--data",
        str(path),
        "--eps",
        "2",
        "--seed",
        "3",
        "--weights",
        "wt",
        "--bounds",
        "x=0:1",
        "--bounds",
        "z=-2:2",
        "--bounds",
        "wt=0:60",
        "--method",
        "newton",
        "--format",
        "json",
    ]
    assert main(args) == 0
    released = json.loads(capsys.readouterr().out)
    res = dpstats.dp_logit("y ~ x + z", pd.read_csv(path), eps=2.0, bounds=BOUNDS, weights="wt", method="newton",
                           random_state=3)  # fmt: skip
    np.testing.assert_allclose(released["params"], res.params.to_numpy(), rtol=1e-12)
    assert released["hyperparameters"]["weights"] == "wt"
