"""Grouped (small-area) fits: by=, groups=, group_sizes= (dpstats/groups/partition.py, dpstats/groups/fit.py).

Deterministic unless a test states its false-failure rate; every call is seeded.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpstats
from dpstats.groups.grouped_results import DPGroupedResults
from dpstats.groups.partition import MIN_ROWS, group_codes
from dpstats.mechanisms.noisystats.mechanism import centered_sensitivity
from dpstats.privacy.budget import PrivacyBudget
from dpstats.results.regression import DPRegressionResults

GRUNFELD_BOUNDS = {"invest": (0.0, 1500.0), "value": (0.0, 6500.0)}
UNIT = {"x": (0.0, 1.0), "y": (0.0, 1.0)}


@pytest.fixture()
def panel(grunfeld: pd.DataFrame) -> pd.DataFrame:
    return grunfeld[["firm", "invest", "value"]].copy()


def _firms(panel: pd.DataFrame) -> list[str]:
    return sorted(panel["firm"].unique())


@pytest.mark.parametrize("se_share", [0.0, None])  # 0: the vectorised batch; None: group by group with SEs
def test_large_eps_equals_statsmodels_per_firm(panel: pd.DataFrame, se_share: float | None) -> None:
    """Grunfeld's 11 firms, 20 years each (public sizes): at eps = 1e13 every firm's fit is its OLS (Diamond
    Match's values fill 1% of the declared range, so its unit-scale nvar is 1e-4 and the noise is amplified)."""
    firms = _firms(panel)
    res = dpstats.dp_ols(
        "invest ~ value",
        panel,
        eps=1e13,
        bounds=GRUNFELD_BOUNDS,
        method="noisystats",
        by="firm",
        groups=firms,
        group_sizes=dict.fromkeys(firms, 20),
        se_share=se_share,
        random_state=0,
    )
    for firm in firms:
        ols = smf.ols("invest ~ value", panel[panel["firm"] == firm]).fit()
        np.testing.assert_allclose(res.params.loc[firm].to_numpy(), ols.params.to_numpy(), rtol=1e-5, atol=1e-6)
    assert res.params.shape == (11, 2) and res.params.index.name == "firm"


def test_vectorised_noise_has_the_ungrouped_law() -> None:
    """Each group's noisy ncov(x, y) is its true ncov plus Laplace(Delta(m) / (eps / 3)), Delta from the ungrouped
    mechanism (Lemma 19). 600 groups of sizes 5..40 give 600 standardised draws; KS against Laplace(0, 1) at
    level 1e-3: false-failure probability 0.1% (seeded, so deterministic in practice)."""
    rng = np.random.default_rng(1)
    sizes = rng.integers(5, 41, 600)
    g = np.repeat(np.arange(sizes.size), sizes)
    x, y = rng.uniform(0, 1, g.size), rng.uniform(0, 1, g.size)
    data = pd.DataFrame({"g": g, "x": x, "y": y})
    eps = 3.0
    res = dpstats.dp_ols(
        "y ~ x",
        data,
        eps=eps,
        bounds=UNIT,
        method="noisystats",
        se_share=0,
        by="g",
        groups=range(sizes.size),
        group_sizes=dict(enumerate(sizes.tolist())),
        random_state=2,
    )
    z = []
    for k, m in enumerate(sizes):
        rows = data[data["g"] == k]
        truth = ((rows["x"] - rows["x"].mean()) * (rows["y"] - rows["y"].mean())).sum()
        noisy = float(res[k].noisy_stats["ncov(x, y)"][0])
        z.append((noisy - truth) / (centered_sensitivity(int(m)) / (eps / 3)))
    assert stats.kstest(z, stats.laplace.cdf).pvalue > 1e-3


def _bad_key_pair(kind: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two neighbours: the same rows but one, which has no declared key in either (declared keys 0, 1, 2)."""
    rng = np.random.default_rng(3)
    g = np.repeat([0, 1, 2], 15)
    base = pd.DataFrame({"tract": g, "x": rng.uniform(0, 1, g.size), "y": rng.uniform(0, 1, g.size)})
    extra_d = pd.DataFrame({"tract": [7], "x": [0.1], "y": [0.9]})  # an undeclared key
    other = {"undeclared": 99, "nan": np.nan, "string": "1", "bool": True}[kind]
    extra_dp = pd.DataFrame({"tract": pd.Series([other], dtype=object), "x": [0.95], "y": [0.05]})
    d = pd.concat([base.iloc[:20], extra_d, base.iloc[20:]], ignore_index=True)
    dp = pd.concat([base.iloc[:20], extra_dp, base.iloc[20:]], ignore_index=True)
    return d, dp


@pytest.mark.parametrize("kind", ["undeclared", "nan", "string", "bool"])
@pytest.mark.parametrize("sizes", [None, {0: 15, 1: 15, 2: 15}])
def test_a_row_with_a_bad_key_changes_nothing(kind: str, sizes: dict | None) -> None:
    """Same seed on neighbours whose differing row has no declared key: identical releases (0 differences),
    whatever the key column's dtype becomes (int, float with a NaN, object with a string or a bool)."""
    d, dp = _bad_key_pair(kind)
    fits = [
        dpstats.dp_ols(
            "y ~ x", data, eps=1.0, bounds=UNIT, method="noisystats", by="tract", groups=[0, 1, 2],
            group_sizes=sizes, random_state=4,
        )
        for data in (d, dp)
    ]  # fmt: skip
    pd.testing.assert_frame_equal(fits[0].tidy(), fits[1].tidy())
    assert fits[0].nobs.tolist() == fits[1].nobs.tolist()


def test_key_matching_is_row_wise() -> None:
    """Declared integers match integers and integral floats, never strings or bools; strings match strings."""
    column = pd.Series([1, 1.0, "1", True, np.nan, None, 2.5, 3], dtype=object)
    assert group_codes(column, (1, 3)).tolist() == [0, 0, -1, -1, -1, -1, -1, 1]
    assert group_codes(pd.Series([1.0, np.nan, 3.0]), (1, 3)).tolist() == [0, -1, 1]
    assert group_codes(pd.Series([5, 1, 9]), (1, 3, 5)).tolist() == [2, 0, -1]
    assert group_codes(pd.Series(np.array([2**64 - 1, 3], dtype=np.uint64)), (-1, 3)).tolist() == [-1, 1]
    assert group_codes(pd.Series(["a", 1, None, "b"]), ("a", "b")).tolist() == [0, -1, -1, 1]


@pytest.mark.parametrize("sizes", [None, {"a": 10, "empty": 10}])
def test_an_empty_declared_group_gets_a_release_like_any_other(sizes: dict | None) -> None:
    rng = np.random.default_rng(5)
    data = pd.DataFrame({"g": ["a"] * 30, "x": rng.uniform(0, 1, 30), "y": rng.uniform(0, 1, 30)})
    res = dpstats.dp_ols("y ~ x", data, eps=2.0, bounds=UNIT, by="g", groups=["a", "empty"],
                         group_sizes=sizes, method="noisystats", random_state=6)  # fmt: skip
    empty = res["empty"]
    assert isinstance(empty, DPRegressionResults) and empty.nobs >= MIN_ROWS
    assert list(res.tidy()["g"]) == ["a", "a", "empty", "empty"]
    assert empty.failed or np.all(np.isfinite(empty.params))


@pytest.mark.parametrize("sizes", [None, {0: 15, 1: 15, 2: 15}])
@pytest.mark.parametrize("method", ["noisystats", "theilsen"])
def test_eps_reported_is_eps_passed(sizes: dict | None, method: str) -> None:
    d, _ = _bad_key_pair("undeclared")
    res = dpstats.dp_ols("y ~ x", d, eps=0.8, bounds=UNIT, by="tract", groups=[0, 1, 2], group_sizes=sizes,
                         method=method, se_share=0, random_state=7)  # fmt: skip
    assert res.privacy.eps == 0.8
    assert sum(part for _, part in res.privacy.split) == pytest.approx(0.8)
    per_group = res[0].privacy.eps
    assert per_group == pytest.approx(0.8 if sizes else 0.8 / 2 * 0.9)
    assert "group sizes" in res.privacy.neighbours


def test_grouped_tidy_carries_each_groups_repair_bias_as_its_own_fit_does() -> None:
    """With ``singular="repair"`` a group whose repair binds keeps a bias: the grouped frame's intervals, bias
    bounds and statuses are those of the group's own fit (widened intervals, dpstats/uncertainty/bias.py), so
    the bound is inside every group's interval; small noisy groups make the repair bind in some of them."""
    rng = np.random.default_rng(11)
    g = np.repeat(np.arange(12), 40)
    x = rng.uniform(size=g.size)
    frame = pd.DataFrame({"g": g, "x": x, "z": np.clip(x + 0.05 * rng.normal(size=g.size), 0, 1)})
    frame["y"] = np.clip(0.2 + 0.3 * frame["x"] + 0.2 * frame["z"] + 0.1 * rng.normal(size=g.size), 0, 1)
    bounds = {"x": (0.0, 1.0), "z": (0.0, 1.0), "y": (0.0, 1.0)}
    res = dpstats.dp_ols("y ~ x + z", frame, eps=1.0, bounds=bounds, by="g", groups=list(range(12)),
                         method="noisystats", singular="repair", random_state=3)  # fmt: skip
    tidy = res.tidy()
    repaired = 0
    for key in range(12):
        own = res[key].tidy()
        rows = tidy[tidy["g"] == key]
        for column in ("conf.low", "conf.high", "bias"):
            np.testing.assert_allclose(rows[column].to_numpy(), own[column].to_numpy())
        assert set(rows["status"]) == {res[key].status}
        repaired += bool(np.any(own["bias"] > 0))
    assert repaired >= 3


def test_tidy_params_and_one_group(tmp_path) -> None:
    d, _ = _bad_key_pair("undeclared")
    res = dpstats.dp_ols("y ~ x", d, eps=1.0, bounds=UNIT, by="tract", groups=[0, 1, 2], method="noisystats",
                         random_state=8)  # fmt: skip
    assert isinstance(res, DPGroupedResults) and len(res) == 3
    tidy = res.tidy()
    columns = ["tract", "term", "estimate", "std.error", "conf.low", "conf.high", "bias", "status"]
    assert list(tidy.columns) == columns
    assert tidy.shape == (6, 8)
    np.testing.assert_array_equal(tidy["estimate"].to_numpy(), res.params.to_numpy().ravel())
    pd.testing.assert_series_equal(res[1].params, res.params.loc[1].rename("coef"), check_names=False)
    tidy.to_csv(tmp_path / "slopes.csv", index=False)
    assert pd.read_csv(tmp_path / "slopes.csv").shape == (6, 8)
    text = str(res.summary())
    assert "3 declared keys of 'tract'" in text and "eps = 1 (pure DP) for the whole call" in text
    with pytest.raises(KeyError):
        res[7]


def test_quantreg_by_group_and_the_budget_ledger() -> None:
    d, _ = _bad_key_pair("undeclared")
    budget = PrivacyBudget(eps=2.0)
    res = dpstats.dp_quantreg("y ~ x", d, q=0.5, eps=1.0, bounds=UNIT, by="tract", groups=[0, 1, 2],
                              random_state=9, budget=budget)  # fmt: skip
    assert isinstance(res, DPGroupedResults) and res.privacy.eps == 1.0
    assert budget.spent["eps"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one quantile"):
        dpstats.dp_quantreg("y ~ x", d, q=[0.25, 0.75], eps=1.0, bounds=UNIT, by="tract", groups=[0, 1, 2])


def test_results_do_not_depend_on_the_pool() -> None:
    """Each group's generator is spawned from the call's: one process or two give the same releases."""
    d, _ = _bad_key_pair("undeclared")
    kwargs = dict(eps=2.0, bounds=UNIT, by="tract", groups=[0, 1, 2], method="theilsen", se_share=0, random_state=10)
    alone = dpstats.dp_ols("y ~ x", d, n_jobs=1, **kwargs)
    pooled = dpstats.dp_ols("y ~ x", d, n_jobs=2, **kwargs)
    pd.testing.assert_frame_equal(alone.params, pooled.params)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"groups": None}, "keys declared"),
        ({"groups": [1, "a"]}, "all strings or all integers"),
        ({"groups": [1, 1]}, "distinct"),
        ({"group_sizes": {0: 15}}, "every declared key"),
        ({"group_sizes": {0: 1, 1: 15, 2: 15}}, "integers >="),
        ({"missing": "raise"}, "missing='impute'"),
        ({"method": "gradient", "variant": "zcdp", "delta": 1e-6}, "not rho"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"by": None}, "pass by="),
    ],
)
def test_public_inputs_are_checked(kwargs: dict, message: str) -> None:
    d, _ = _bad_key_pair("undeclared")
    call = {"eps": 1.0, "bounds": UNIT, "by": "tract", "groups": [0, 1, 2], **kwargs}
    with pytest.raises(ValueError, match=message):
        dpstats.dp_ols("y ~ x", d, **call)


def test_a_group_too_small_for_its_mechanism_fails_alone() -> None:
    """Tukey needs 12 models of d rows; a declared size of 5 makes that group's release a failure, not the call's."""
    d, _ = _bad_key_pair("undeclared")
    res = dpstats.dp_ols("y ~ x", d, eps=1.0, delta=1e-6, bounds=UNIT, method="tukey", by="tract", groups=[0, 1, 2],
                         group_sizes={0: 15, 1: 15, 2: 5}, random_state=11)  # fmt: skip
    assert res[2].failed and "refused by method='tukey'" in res[2].reason
    assert res.privacy.eps == 1.0


def test_mechanisms_on_variables_run_by_group() -> None:
    """The perturbed histogram bins the formula's variables: each group's slice of them (and quantile regression)."""
    d, _ = _bad_key_pair("undeclared")
    for fit in (dpstats.dp_ols, dpstats.dp_quantreg):
        res = fit("y ~ x", d, eps=2.0, bounds=UNIT, method="histogram", by="tract", groups=[0, 1, 2], random_state=12)
        assert res.params.shape == (3, 2) and res.context["method"] == "histogram"


def test_a_grouped_result_leaks_no_value_key_or_label() -> None:
    """A planted out-of-bounds value, an undeclared key and the row labels appear in no output and no pickle,
    and no warning is emitted (with pad rows, truncated rows and dropped rows all present)."""
    import pickle
    import warnings

    d, _ = _bad_key_pair("undeclared")
    d.index = [f"ROWLABELQQ{i}" for i in range(len(d))]
    d["tract"] = d["tract"].astype(object)
    d.iloc[3, d.columns.get_loc("x")] = 987654.321
    d.iloc[20, d.columns.get_loc("tract")] = "SECRETKEYZZ"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dpstats.dp_ols("y ~ x", d, eps=5.0, bounds=UNIT, by="tract", groups=[0, 1, 2], method="noisystats",
                             group_sizes={0: 12, 1: 20, 2: 15}, random_state=13)  # fmt: skip
    assert caught == [], [str(w.message) for w in caught]
    texts = [str(res), repr(res), res.tidy().to_string(), res.params.to_string(), str(res[0].summary())]
    blob = pickle.dumps(res)
    for secret in ("987654", "SECRETKEYZZ", "ROWLABELQQ"):
        assert all(secret not in text for text in texts) and secret.encode() not in blob


KEYS = st.one_of(
    st.integers(-2, 3), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=2), st.none(), st.booleans()
)


@settings(max_examples=40, deadline=None)
@given(keys=st.lists(KEYS, max_size=40), public=st.booleans(), infer=st.booleans(), text_keys=st.booleans())
def test_any_key_column_gives_one_release_per_declared_key(keys: list, public: bool, infer: bool, text_keys: bool):
    """Whatever the key column holds (and whatever dtype pandas gives it), the call returns one release per
    declared key, with no error and no warning."""
    import warnings

    n = len(keys)
    column = pd.Series(keys, dtype=None if infer else object)
    data = pd.DataFrame({"tract": column, "x": np.linspace(0, 1, n), "y": np.linspace(1, 0, n)})
    declared = ["0", "1", "a"] if text_keys else [0, 1, 3]
    sizes = dict.fromkeys(declared, 4) if public else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = dpstats.dp_ols("y ~ x", data, eps=1.0, bounds=UNIT, method="noisystats", by="tract", groups=declared,
                             group_sizes=sizes, random_state=0)  # fmt: skip
    assert res.params.shape == (3, 2) and list(res.params.index) == declared


def test_tidy_to_parquet_is_one_line(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    d, _ = _bad_key_pair("undeclared")
    res = dpstats.dp_ols("y ~ x", d, eps=1.0, bounds=UNIT, by="tract", groups=[0, 1, 2], method="noisystats")
    res.tidy().to_parquet(tmp_path / "slopes.parquet")
    back = pd.read_parquet(tmp_path / "slopes.parquet")
    assert back.shape == (6, 8) and back["tract"].tolist() == [0, 0, 1, 1, 2, 2]


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (tqdm's ``disable=None`` shows bars on terminals only)."""

    def isatty(self) -> bool:
        return True


def test_a_progress_bar_shows_only_on_a_terminal_once_the_fits_run_longer_than_its_delay(monkeypatch) -> None:
    """tqdm's bar (``delay``: it appears after PROGRESS_SECONDS) on the group-by-group fits: none on a fast
    call at the default delay, none in a pipe; with the delay at 0 on a terminal the bar is written."""
    pytest.importorskip("tqdm")
    from dpstats.groups import fit as group_fit

    d, _ = _bad_key_pair("undeclared")
    call = dict(eps=1.0, bounds=UNIT, method="histogram", by="tract", groups=[0, 1, 2], random_state=13)
    for delay, stream, shows in ((group_fit.PROGRESS_SECONDS, _Terminal(), False), (0.0, io.StringIO(), False),
                                 (0.0, _Terminal(), True)):  # fmt: skip
        monkeypatch.setattr(group_fit, "PROGRESS_SECONDS", delay)
        monkeypatch.setattr(sys, "stderr", stream)
        dpstats.dp_ols("y ~ x", d, **call)
        assert ("3/3" in stream.getvalue()) == shows
