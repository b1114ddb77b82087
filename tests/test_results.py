"""The results object: statsmodels and broom names, shapes, privacy record, failure."""

import dataclasses
import json
import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import DPRegressionResults

# The mechanism under test, whatever method="auto" picks in later versions.
dp_ols = partial(dpstats.dp_ols, method="noisystats")

N = 80
BOUNDS = {"x": (0.0, 10.0), "z": (-5.0, 5.0), "y": (-20.0, 40.0)}
LEVELS = {"g": ["lo", "mid", "hi"]}
TERMS = ["Intercept", "g[T.mid]", "g[T.hi]", "x", "z"]
TIDY_COLUMNS = ["term", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high", "bias", "status"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(99)
    frame = pd.DataFrame(
        {"x": rng.uniform(0, 10, N), "z": rng.uniform(-5, 5, N), "g": rng.choice(["lo", "mid", "hi"], N)}
    )
    frame["y"] = 2 + 1.5 * frame.x - frame.z + rng.normal(0, 1, N)
    return frame


@pytest.fixture(scope="module")
def res(data):
    out = dp_ols("y ~ x + z + g", data, eps=30.0, bounds=BOUNDS, levels=LEVELS, random_state=1)
    assert not out.failed
    return out


def test_params_and_standard_errors(res):
    assert isinstance(res, DPRegressionResults)
    assert res.term_names == TERMS
    for series in (res.params, res.bse, res.tvalues, res.pvalues):
        assert isinstance(series, pd.Series)
        assert list(series.index) == TERMS
    assert np.all(np.isfinite(res.params))
    # NoisyStats' standard errors come from its budgeted sandwich and bootstrap: finite and positive
    assert np.all(res.bse > 0) and np.all(np.isfinite(res.bse))
    np.testing.assert_allclose(res.tvalues, res.params / res.bse)
    assert np.all((res.pvalues > 0) & (res.pvalues <= 1))


def test_no_budget_for_standard_errors_gives_nan(data):
    """se_share=0 spends nothing on them: NaN standard errors, z, p and intervals, and a note saying so."""
    res = dp_ols("y ~ x + z + g", data, eps=30.0, bounds=BOUNDS, levels=LEVELS, random_state=1, se_share=0)
    assert res.bse.isna().all() and res.tvalues.isna().all() and res.pvalues.isna().all()
    assert res.conf_int().isna().all().all() and res.replicates is None
    assert "se_share=0" in res.se_note
    assert [name for name, _ in res.privacy.split] == ["W'W, W'y"]  # a categorical design: structured release


@pytest.mark.parametrize("share", [-0.1, 1.0, float("nan"), "0.2", True])
def test_bad_se_share_is_refused_before_the_data_are_read(share):
    with pytest.raises((TypeError, ValueError), match="se_share"):
        dp_ols("y ~ x", None, eps=1.0, bounds=BOUNDS, se_share=share)


def test_conf_int_and_cov_params(res):
    p = len(TERMS)
    for alpha in (0.05, 0.1, 0.5):
        ci = res.conf_int(alpha)
        assert list(ci.columns) == ["lower", "upper"] and list(ci.index) == TERMS and ci.shape == (p, 2)
        assert np.all(ci["lower"] < res.params) and np.all(res.params < ci["upper"])
    narrow, wide = res.conf_int(0.5), res.conf_int(0.01)
    assert np.all(wide["lower"] < narrow["lower"]) and np.all(narrow["upper"] < wide["upper"])
    assert res.conf_int().equals(res.conf_int(0.05))
    for alpha in (0, 1, -0.1, 1.5):
        with pytest.raises(ValueError, match="alpha"):
            res.conf_int(alpha)
    cov = res.cov_params()
    assert cov.shape == (p, p) and list(cov.index) == TERMS and list(cov.columns) == TERMS


def test_nobs_and_predict(res, data):
    assert res.nobs == N and isinstance(res.nobs, int)
    newdata = pd.DataFrame({"x": [1.0, 5.0, 9.0], "z": [0.0, -2.0, 4.0], "g": ["hi", "lo", "hi"]}, index=[7, 8, 9])
    pred = res.predict(newdata)
    assert isinstance(pred, pd.Series) and list(pred.index) == [7, 8, 9]
    p = res.params
    expected = [p["Intercept"] + p["g[T.hi]"] + p["x"], p["Intercept"] + 5 * p["x"] - 2 * p["z"]]
    np.testing.assert_allclose(pred.to_numpy()[:2], expected, rtol=1e-12)
    assert res.predict(data).shape == (N,)
    assert res.predict({"x": [1.0], "z": [2.0], "g": ["mid"]}).shape == (1,)


def test_tidy_and_glance(res):
    tidy = res.tidy()
    assert list(tidy.columns) == TIDY_COLUMNS
    assert tidy.shape == (len(TERMS), 9)
    assert tidy["term"].tolist() == TERMS
    np.testing.assert_array_equal(tidy["estimate"].to_numpy(), res.params.to_numpy())
    np.testing.assert_array_equal(tidy["std.error"].to_numpy(), res.bse.to_numpy())
    np.testing.assert_allclose(tidy["conf.low"].to_numpy(), res.conf_int()["lower"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(tidy["conf.high"].to_numpy(), res.conf_int()["upper"].to_numpy(), rtol=1e-12)
    assert list(res.tidy(conf_int=False).columns) == [*TIDY_COLUMNS[:5], "bias", "status"]  # no interval columns
    assert set(tidy["status"]) == {"ok"} and (tidy["bias"] == 0).all()  # singular="fail" keeps no bias

    glance = res.glance()
    assert glance.shape[0] == 1
    row = glance.iloc[0]
    assert row["nobs"] == N and row["eps"] == 30.0 and row["method"] == "noisystats"
    assert row["notion"] == "pure" and not row["failed"] and row["status"] == "ok"
    assert row["bias"] == 0 and row["bias.source"] is None
    assert row["inference"] == res.inference == "bootstrap (percentile)"


def test_privacy_record_adds_up_to_eps(res):
    spent = res.privacy
    assert spent.notion == "pure" and spent.eps == 30.0 and spent.delta == 0.0
    names = [name for name, _ in spent.split]
    assert names == ["W'W, W'y", "SE: RSS", "SE: HC meat"]  # g is categorical: the structured release
    assert math.isclose(sum(part for _, part in spent.split), 30.0, rel_tol=1e-12)
    assert all(part > 0 for _, part in spent.split)
    assert "replace-one" in spent.neighbours


def test_privacy_split_without_intercept(data):
    res = dp_ols("y ~ x + z - 1", data, eps=0.7, bounds=BOUNDS, random_state=2)
    assert math.isclose(sum(part for _, part in res.privacy.split), 0.7, rel_tol=1e-12)
    assert res.term_names == ["x", "z"]


def test_noisy_stats_shapes_and_copies(res):
    stats = res.noisy_stats
    assert set(stats) == {"nvar(x)", "ncov(x, y)"}
    slopes = len(TERMS) - 1
    assert stats["nvar(x)"].shape == (slopes, slopes) and stats["ncov(x, y)"].shape == (slopes,)
    np.testing.assert_array_equal(stats["nvar(x)"], stats["nvar(x)"].T)
    stats["nvar(x)"][:] = 0.0
    assert not np.all(res.noisy_stats["nvar(x)"] == 0.0)


def test_results_are_immutable(res):
    before = res.params.to_numpy().copy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.nobs = 3
    params = res.params
    params.iloc[0] = 1e6
    tidy = res.tidy()
    tidy.loc[0, "estimate"] = 1e6
    cov = res.cov_params()
    variance = cov.iloc[0, 0]
    cov.iloc[0, 0] = 1e6
    replicates = res.replicates
    replicates.iloc[0, 0] = 1e6
    assert res.cov_params().iloc[0, 0] == variance != 1e6
    assert res.replicates.iloc[0, 0] != 1e6
    np.testing.assert_array_equal(res.params.to_numpy(), before)


def test_to_dict_is_json(res):
    out = json.loads(json.dumps(res.to_dict()))
    assert out["terms"] == TERMS and out["nobs"] == N and out["failed"] is False
    assert out["privacy"]["eps"] == 30.0
    assert math.isclose(sum(out["privacy"]["split"].values()), 30.0, rel_tol=1e-12)
    assert out["levels"] == {"g": LEVELS["g"]}
    assert out["bounds"]["x"] == [0.0, 10.0]


# --------------------------------------------------------------------------
# Failure is an output
# --------------------------------------------------------------------------


def _small_frame():
    return pd.DataFrame({"x": [0.1, 0.2, 0.15, 0.3, 0.25], "y": [1.0, 1.4, 1.1, 2.0, 1.8]})


def _scan(eps=0.05, seeds=range(200)):
    frame, bounds = _small_frame(), {"x": (0.0, 1.0), "y": (0.0, 3.0)}
    return [(seed, dp_ols("y ~ x", frame, eps=eps, bounds=bounds, random_state=seed)) for seed in seeds]


@pytest.fixture(scope="module")
def scanned():
    return _scan()


def test_failure_iff_noisy_nvar_not_positive(scanned):
    """p = 1: the paper's failure output is exactly 'noisy nvar(x) <= 0'."""
    failed = [r.failed for _, r in scanned]
    assert any(failed) and not all(failed)
    for _, r in scanned:
        assert r.failed == (r.noisy_stats["nvar(x)"].item() <= 0)


def test_a_failed_fit_reports_itself(scanned):
    seed, res = next((s, r) for s, r in scanned if r.failed)
    assert res.failed and res.reason and "positive definite" in res.reason
    assert res.params.isna().all() and list(res.params.index) == ["Intercept", "x"]
    assert res.tidy()["estimate"].isna().all()
    assert res.privacy.eps == 0.05  # the budget is still spent
    assert math.isclose(sum(part for _, part in res.privacy.split), 0.05, rel_tol=1e-12)
    assert res.glance().iloc[0]["failed"]
    assert res.to_dict()["failed"] is True
    text = res.summary().as_text()
    assert "FAILED" in text and "budget was still spent" in text
    assert "FAILED" in str(res)
    # deterministic: the same seed fails again
    again = dp_ols("y ~ x", _small_frame(), eps=0.05, bounds={"x": (0.0, 1.0), "y": (0.0, 3.0)}, random_state=seed)
    assert again.failed


def test_numpy_levels_give_plain_json_and_summary(data):
    """Levels taken from the data's own type (np.int64 from .unique()) must not break to_dict or the summary."""
    frame = data.assign(k=np.resize(np.array([3, 1, 2], dtype=np.int64), N))
    levels = {"k": np.array([1, 2, 3], dtype=np.int64)}
    res = dp_ols("y ~ x + C(k)", frame, eps=30.0, bounds=BOUNDS, levels=levels, random_state=0)
    out = json.loads(json.dumps(res.to_dict()))
    assert out["levels"] == {"k": [1, 2, 3]}
    assert "k: [1, 2, 3]" in res.summary().as_text()
    assert res.term_names == ["Intercept", "C(k)[T.2]", "C(k)[T.3]", "x"]


def test_a_function_from_the_callers_namespace_is_refused(data):
    """A formula sees the data's columns and the row-wise functions only, never the caller's namespace:
    a user function could read other rows."""

    def double(v):
        return 2 * v

    with pytest.raises(ValueError, match=r"'double\(x\)' is not allowed"):
        dp_ols("y ~ double(x)", data, eps=1e9, bounds={"double(x)": (0, 20), "y": BOUNDS["y"]}, random_state=0)
