"""Public preconditioning of a variable and its square in NoisyStats (dpstats/mechanisms/precondition.py)."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.audit.frame_pairs import FramePair, as_called, design_pair
from dpstats.audit.replay import replay
from dpstats.frontend.formula import build_design
from dpstats.frontend.survey import SurveyDeclaration
from dpstats.mechanisms import PrivacyRequest, precondition

BOUNDS = {"y": (-5.0, 15.0), "x": (-6.0, 64.0), "z": (0.0, 18.0)}
FORMULA = "y ~ x + I(x**2 / 100) + z + C(g)"


def _data(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"x": rng.uniform(-6, 64, n), "z": rng.uniform(0, 18, n), "g": rng.choice(["a", "b"], n)})
    d["y"] = 1 + 0.08 * d.x - 0.13 * d.x**2 / 100 + 0.09 * d.z + 0.3 * (d.g == "b") + rng.normal(0, 0.5, n)
    return d


def _design(formula: str = FORMULA):
    design, _ = build_design(formula, _data(), BOUNDS, {"g": ["a", "b"]})
    return design


def test_a_variable_and_its_square_are_found_and_nothing_else():
    design = _design()
    (pair,) = precondition.pairs(design)
    assert design.term_names[pair.linear] == "x" and design.term_names[pair.square] == "I(x ** 2 / 100)"
    assert precondition.pairs(_design("y ~ x + z + C(g)")) == ()
    assert precondition.pairs(_design("y ~ x + I(x**2 / 100):z")) == ()  # the square with another variable


def test_the_new_column_stays_inside_its_bounds_over_the_whole_interval_and_is_exactly_the_old_one_remapped():
    design = _design()
    (pair,) = precondition.pairs(design)
    x = np.linspace(-6, 64, 100_001)
    q = x**2 / 100 - pair.a - pair.b * x
    lo, hi = pair.bounds
    assert lo <= q.min() and q.max() <= hi and hi - lo < 0.3 * (64**2 / 100)  # far narrower than x^2's range
    pre = precondition.preconditioned(design, (pair,))
    expected = design.X[:, pair.square] - pair.a - pair.b * design.X[:, pair.linear]
    np.testing.assert_allclose(pre.X[:, pair.square], expected)


def test_bounds_declared_for_an_expression_leave_the_design_as_it_is():
    data = _data()
    data["h"] = np.exp(data["z"] / 6)
    bounds = {"y": BOUNDS["y"], "x": BOUNDS["x"], "np.log(h)": (0.0, 3.0)}
    formula = "y ~ x + I(x**2 / 100) + np.log(h)"
    res = dpstats.dp_ols(formula, data, eps=1e9, bounds=bounds, method="noisystats", random_state=0)
    np.testing.assert_allclose(res.params.to_numpy(), smf.ols(formula, data).fit().params.to_numpy(), rtol=1e-6)


def test_at_a_huge_eps_the_preconditioned_fit_is_ols_and_names_its_reparametrisation():
    data = _data()
    res = dpstats.dp_ols(FORMULA, data, eps=1e9, bounds=BOUNDS, levels={"g": ["a", "b"]}, method="noisystats",
                         random_state=0)  # fmt: skip
    ref = smf.ols(FORMULA, data).fit()
    np.testing.assert_allclose(res.params.to_numpy(), ref.params.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(res.bse.to_numpy(), ref.get_robustcov_results("HC1").bse, rtol=0.1)
    assert res.hyperparameters["preconditioned"] == "I(x ** 2 / 100) against x"


@pytest.mark.parametrize("weighted", [False, True])
def test_at_a_moderate_eps_the_square_and_its_variable_stay_close_to_ols(weighted):
    """Seeded: 10 fits at eps 5 on 20,000 rows; without preconditioning about half of them put x and its square
    15% or more off (in opposite directions). 8 of 10 within 15% fail with probability below 1e-3."""
    data = _data(20_000, seed=1)
    data["wt"] = np.random.default_rng(2).uniform(1, 3, len(data))
    bounds = {**BOUNDS, "wt": (0.0, 3.0)}
    ref = (smf.wls(FORMULA, data, weights=data.wt) if weighted else smf.ols(FORMULA, data)).fit()
    close = 0
    for seed in range(10):
        res = dpstats.dp_ols(FORMULA, data, eps=5.0, bounds=bounds, levels={"g": ["a", "b"]}, method="noisystats",
                             singular="repair", random_state=seed, weights="wt" if weighted else None)  # fmt: skip
        errors = np.abs(res.params / ref.params - 1)[["x", "I(x ** 2 / 100)"]]
        close += bool((errors <= 0.15).all())
    assert close >= 8


@pytest.mark.parametrize("weighted", [False, True])
def test_the_preconditioned_release_stays_within_its_sensitivity_when_a_row_moves_across_the_square(weighted):
    """The replay audit (dpstats/audit/replay.py), deterministic: row 0 moves from the square's residual's
    lowest point (its vertex) to its highest (an end of the interval), and the response across its bounds; with
    weights, from weight 0 to the top. Every release moves by at most its declared sensitivity."""
    base = _data(300, seed=3).assign(wt=1.0)
    (pair,) = precondition.pairs(_design())
    vertex = -pair.b * 100 / 2  # q = x^2 / 100 - a - b x is lowest where its derivative vanishes
    frames = []
    for low, high in ((vertex, 64.0), (64.0, -6.0)):
        d, d_prime = base.copy(), base.copy()
        d.loc[0, ["x", "y", "wt"]] = [low, -5.0, 0.0 if weighted else 1.0]
        d_prime.loc[0, ["x", "y", "wt"]] = [high, 15.0, 3.0 if weighted else 1.0]
        frames.append(FramePair(f"x {low:g} -> {high:g}", d, d_prime))
    survey = SurveyDeclaration("wt") if weighted else None
    bounds = {**BOUNDS, "wt": (0.0, 3.0)}
    pairs = [design_pair(f, FORMULA, bounds, {"g": ["a", "b"]}, survey) for f in frames]
    assert all(precondition.pairs(p.d) for p in pairs)
    fit = as_called("ols", "noisystats")
    audit = [*pairs, *(p.swapped() for p in pairs)]
    report = replay(fit, audit, PrivacyRequest(eps=8.0), seeds=range(2), options={"singular": "repair"})
    assert not report.violations, report.as_text()
    assert report.releases

    def unclipped(design, found):  # a canary: q declared a tenth as wide as it is, and not clipped to it
        X, bounds = design.X.copy(), design.x_bounds.copy()
        for p in found:
            X[:, p.square] = X[:, p.square] - p.a - p.b * X[:, p.linear]
            bounds[p.square] = (p.bounds[0], p.bounds[0] + 0.1 * (p.bounds[1] - p.bounds[0]))
        return replace(design, X=X, x_bounds=bounds)

    with mock.patch.object(precondition, "preconditioned", unclipped):
        flagged = replay(fit, audit, PrivacyRequest(eps=8.0), seeds=range(1), options={"singular": "repair"})
    assert flagged.violations
