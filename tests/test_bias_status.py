"""A bias is named and bounded (docs/DESIGN.md section 2: an interval is a promise; dpstats/uncertainty/bias.py): a
bound the release gives widens the intervals by Armstrong & Kolesar's critical value and makes the fit "biased"
only where it exceeds the standard error; a bias nothing bounds (Theil-Sen's estimand) makes it "biased" and is
named by the summary, tidy(), glance(), dpstats.table and R; auto takes a biased mechanism only where no other is
predicted usable. Deterministic."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats
from statsmodels.datasets import engel

import dpstats
from dpstats.planning import selection
from dpstats.planning.comparison import plan_facts
from dpstats.planning.error_model import Prediction
from dpstats.uncertainty import bias as bias_rule

FORMULA = "foodexp ~ income"
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}


@pytest.fixture(scope="module")
def theilsen_fit() -> dpstats.DPRegressionResults:
    data = engel.load_pandas().data
    return dpstats.dp_ols(FORMULA, data, eps=1.0, bounds=BOUNDS, method="theilsen", random_state=1)


def test_a_bias_nothing_bounds_is_named_everywhere_it_is_shown(theilsen_fit: dpstats.DPRegressionResults) -> None:
    res = theilsen_fit
    assert res.status == "biased" and np.isinf(res.bias).all() and "Theil-Sen line" in res.bias_source
    assert dict(res.summary().model)["Status"].startswith("biased: the interval does not cover")
    assert set(res.tidy()["status"]) == {"biased"} and np.isinf(res.tidy()["bias"]).all()
    assert res.glance()[["status", "bias", "bias.source"]].iloc[0].tolist() == ["biased", np.inf, res.bias_source]
    assert "(1): biased: the interval does not cover" in " ".join(dpstats.table(res).as_text().split())
    assert res.to_dict()["bias"] == [np.inf, np.inf] and res.to_dict()["bias_source"] == res.bias_source


def _with_bound(res: dpstats.DPRegressionResults, bound: np.ndarray) -> dpstats.DPRegressionResults:
    """``res`` as if its release had named a bias bounded by ``bound`` (the results layer is what is tested)."""
    return dataclasses.replace(res, bias_source="a test bias", _bias_bound=np.asarray(bound, dtype=float))


def _critical_value(t: float) -> float:
    """The 0.95 quantile of |N(t, 1)| by bisection, independently of dpstats' root finder."""
    lo, hi = 1.0, 10.0
    for _ in range(100):
        mid = (lo + hi) / 2
        covered = stats.norm.cdf(mid - t) - stats.norm.cdf(-mid - t)
        lo, hi = (mid, hi) if covered < 0.95 else (lo, mid)
    return lo


@pytest.mark.parametrize("ratio", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("law", ["bootstrap (basic)", "normal"])
def test_a_bounded_bias_widens_the_interval_by_the_critical_value(ratio: float, law: str) -> None:
    data = engel.load_pandas().data
    plain = dpstats.dp_ols(FORMULA, data, eps=5.0, bounds=BOUNDS, method="gradient", random_state=3)
    if law == "normal":  # the same release read through its standard errors alone
        plain = dataclasses.replace(plain, _replicates=None)
    assert plain.inference == law and plain.status == "ok" and (plain.bias == 0).all()
    se = plain.bse.to_numpy()
    res = _with_bound(plain, ratio * se)
    widening = (_critical_value(ratio) - stats.norm.isf(0.025)) * se  # per side
    before, after = plain.conf_int(0.05), res.conf_int(0.05)
    assert np.allclose(before["lower"] - after["lower"], widening, rtol=1e-8)
    assert np.allclose(after["upper"] - before["upper"], widening, rtol=1e-8)
    assert res.status == ("biased" if ratio > bias_rule.DOMINATES else "ok")
    assert np.allclose(res.tidy()["bias"], ratio * se) and np.isclose(res.glance()["bias"].iloc[0], ratio)
    if plain.inference == "normal":  # the p-values invert the widened intervals: p < 0.05 where 0 is outside
        outside = (after["lower"] > 0) | (after["upper"] < 0)
        assert ((res.pvalues < 0.05) == outside).all()
    assert (res.pvalues >= plain.pvalues).all()
    text = " ".join(dpstats.table(res).as_text().split())
    assert f"carry a bias bound up to {ratio:.2g} standard errors (a test bias)" in text


def test_a_fit_without_a_known_bias_is_ok_and_a_failed_one_is_failed() -> None:
    data = engel.load_pandas().data
    ok = dpstats.dp_ols(FORMULA, data, eps=1.0, bounds=BOUNDS, method="gradient", random_state=1)
    assert ok.status == "ok" and ok.bias_source is None and (ok.bias == 0).all()
    assert set(ok.tidy()["status"]) == {"ok"}
    tiny = data.iloc[:5]
    failed = next(
        res
        for seed in range(200)
        if (
            res := dpstats.dp_ols(FORMULA, tiny, eps=0.05, bounds=BOUNDS, method="noisystats", random_state=seed)
        ).failed
    )
    assert failed.status == "failed" and failed.bias_source is None


def _predictions(rels: dict[str, float]):
    def predict(candidate, facts) -> Prediction:
        rel = rels.get(candidate.label, 50.0)
        return Prediction(candidate.label, dev=(rel,) * 3, rel=(rel,) * 3, failure=0.0)

    return predict


@pytest.mark.parametrize(("noisystats", "chosen"), [(1.9, "noisystats"), (2.1, "histogram")])
def test_auto_takes_the_biased_histogram_only_where_nothing_else_is_usable(
    monkeypatch: pytest.MonkeyPatch, noisystats: float, chosen: str
) -> None:
    facts = plan_facts(FORMULA, 235, 1.0, BOUNDS, None, "ols", 0.0)
    monkeypatch.setattr(selection, "predict", _predictions({"histogram": 1.0, "noisystats": noisystats}))
    assert selection.choose(facts).method == chosen
    assert np.isclose(selection.USABLE_REL, 2.0)
