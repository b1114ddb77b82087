"""A bias the interval does not cover is named (docs/DESIGN.md section 2: an interval is a promise): the perturbed
histogram's binning, KNG's domain boundary and Theil-Sen's line (tests/test_theilsen.py) make a fit's status
"biased", shown by the summary, tidy(), glance(), dpstats.table and R; auto takes a biased mechanism only where no
other is predicted usable. Deterministic."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.datasets import engel

import dpstats
from dpstats.planning import selection
from dpstats.planning.comparison import plan_facts
from dpstats.planning.error_model import Prediction

FORMULA = "foodexp ~ income"
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}


@pytest.fixture(scope="module")
def histogram_fit() -> dpstats.DPRegressionResults:
    data = engel.load_pandas().data
    return dpstats.dp_quantreg(FORMULA, data, q=0.5, eps=1.0, bounds=BOUNDS, method="histogram", random_state=1)


def test_a_histogram_fit_is_biased_everywhere_it_is_shown(histogram_fit: dpstats.DPRegressionResults) -> None:
    res = histogram_fit
    assert res.status == "biased" and "binning bias (at the cells' noisy means" in res.bias
    assert dict(res.summary().model)["Status"].startswith("biased: the interval does not cover the binning")
    assert set(res.tidy()["status"]) == {"biased"}
    assert res.glance()[["status", "bias"]].iloc[0].tolist() == ["biased", res.bias]
    assert "(1): biased: the interval does not cover the binning bias" in " ".join(dpstats.table(res).as_text().split())
    assert res.to_dict()["bias"] == res.bias


def test_a_fit_without_a_known_bias_is_ok_and_a_failed_one_is_failed() -> None:
    data = engel.load_pandas().data
    ok = dpstats.dp_ols(FORMULA, data, eps=1.0, bounds=BOUNDS, method="gradient", random_state=1)
    assert ok.status == "ok" and ok.bias is None and set(ok.tidy()["status"]) == {"ok"}
    tiny = data.iloc[:5]
    failed = next(
        res
        for seed in range(200)
        if (
            res := dpstats.dp_ols(FORMULA, tiny, eps=0.05, bounds=BOUNDS, method="noisystats", random_state=seed)
        ).failed
    )
    assert failed.status == "failed" and failed.bias is None


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
