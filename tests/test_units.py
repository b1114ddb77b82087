"""The privacy unit is a person: ``unit=`` and ``max_rows=`` (dpstats/design/units.py, dpstats/mechanisms/units.py,
dpstats/api/unit_calls.py, dpstats/mechanisms/tukey/models.py).

1. The declaration is public and checked before any data are read.
2. Contribution bounding keeps at most k rows per unit, chosen without looking at the values.
3. Group privacy: the row-level request's chain adds up to the unit-level one, and the report says so.
4. Tukey depth deals whole units to its batches: one unit's rows change exactly one model (brute force), the
   replay on unit-level corner pairs is sound, and a row-level partition (the canary) is flagged.
5. The gray-box audit at the unit level: the histogram's counts under group privacy stay within k times their
   recorded eps; run at the row-level calibration while claiming the unit level (the canary), they are flagged.
6. Limits: at eps = 1e9 with k at least every unit's rows, each mechanism's fit is its row-level fit.
7. The unit and k are said in the summary, tidy, glance, the paper table and the budget's ledger.

False failures: the gray-box audits at alpha = 1e-6 each; everything else is deterministic or seeded.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats
from dpstats.audit import GrayBoxSamples, NeighbourPair, design_from_arrays, design_from_points, graybox_audit, replay
from dpstats.audit.unit_pairs import unit_claim, unit_corner_pairs, unit_level
from dpstats.design.units import Units, bound_contributions, check_unit
from dpstats.mechanisms import REGISTRY, PrivacyRequest
from dpstats.mechanisms.tukey import inference as tukey_inference
from dpstats.mechanisms.tukey import mechanism as tukey_mechanism
from dpstats.mechanisms.tukey import models as tukey_models
from dpstats.mechanisms.units import row_request, unit_spent
from dpstats.privacy.accounting import PrivacySpent

BOUNDS = {"x": (-3.0, 3.0), "y": (-5.0, 7.0)}
ALPHA = 1e-6


def _panel(units: int = 60, rows: int = 5, seed: int = 1) -> pd.DataFrame:
    """A panel whose x and error each carry a unit effect (intra-unit correlation 0.5)."""
    rng = np.random.default_rng(seed)
    ux, ue = rng.normal(size=units), rng.normal(size=units)
    x = (np.repeat(ux, rows) + rng.normal(size=units * rows)) / np.sqrt(2)
    e = (np.repeat(ue, rows) + rng.normal(size=units * rows)) / np.sqrt(2)
    return pd.DataFrame(
        {
            "id": np.repeat(np.arange(units), rows),
            "x": np.clip(x, *BOUNDS["x"]),
            "y": np.clip(1.0 + 0.5 * x + e, *BOUNDS["y"]),
        }
    )


# --------------------------------------------------------------------------
# 1. The declaration
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "max_rows", "message"),
    [
        (None, 5, "pass unit="),
        ("id", None, "needs max_rows"),
        ("id", 0, "positive integer"),
        ("id", True, "positive integer"),
        ("id", 2.5, "positive integer"),
        ("", 5, "name a column"),
        (3, 5, "name a column"),
    ],
)
def test_the_declaration_is_checked(unit: object, max_rows: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_unit(unit, max_rows)


def _refused(**kwargs: object) -> str:
    """The message of a call refused before its data are read: the data here could not even be read."""
    call = {"formula": "y ~ x", "data": None, "eps": 1.0, "bounds": BOUNDS, "unit": "id", "max_rows": 5, **kwargs}
    estimator = dpstats.dp_quantreg if "q" in call else dpstats.dp_ols
    with pytest.raises(ValueError) as error:
        estimator(**call)
    return str(error.value)


def test_calls_that_cannot_keep_the_promise_are_refused_before_reading_the_data() -> None:
    assert "no standard errors clustered by unit" in _refused(method="theilsen", se_share=0.3)
    assert "zCDP" in _refused(method="gradient", variant="zcdp", eps=None, rho=0.5)
    assert "needs delta > 0" in _refused(q=0.5)
    assert "one fit" in _refused(by="g", groups=["a"])


def test_a_missing_unit_column_is_refused() -> None:
    """(On a Dask DataFrame too, with the rest of the Dask path: tests/test_units_dask.py.)"""
    with pytest.raises(ValueError, match="not a column"):
        dpstats.dp_ols("y ~ x", _panel(), eps=1.0, bounds=BOUNDS, unit="person", max_rows=5)


# --------------------------------------------------------------------------
# 2. Contribution bounding
# --------------------------------------------------------------------------


def test_a_unit_of_50_rows_contributes_max_rows() -> None:
    data = pd.concat([_panel(), pd.DataFrame({"id": 999, "x": np.zeros(50), "y": np.zeros(50)})])
    res = dpstats.dp_ols("y ~ x", data, eps=1.0, bounds=BOUNDS, method="noisystats", unit="id", max_rows=5)
    assert res.nobs == 60 * 5 + 5
    res = dpstats.dp_ols("y ~ x", data, eps=1.0, bounds=BOUNDS, method="noisystats", unit="id", max_rows=2)
    assert res.nobs == 61 * 2 <= 61 * 2


def test_the_kept_rows_do_not_depend_on_the_values() -> None:
    keys = pd.Series([3, 1, 1, 3, 3, 3, 2, 1, np.nan, np.nan, np.nan])
    kept, units = bound_contributions(keys, "id", 2, np.random.default_rng(5))
    again, _ = bound_contributions(keys.copy(), "id", 2, np.random.default_rng(5))
    np.testing.assert_array_equal(kept, again)  # the keys and the draws decide, nothing else is read
    assert units.count == 4  # the missing keys are one unit
    counts = np.bincount(units.codes, minlength=units.count)
    np.testing.assert_array_equal(counts, [2, 2, 1, 2])
    assert np.all(np.diff(kept) > 0)  # the data's order is kept
    shares = np.zeros(11)
    for seed in range(400):  # every row of a unit is as likely to be kept: the choice is uniform
        chosen, _ = bound_contributions(keys, "id", 2, np.random.default_rng(seed))
        shares[chosen] += 1 / 400
    np.testing.assert_allclose(shares[[0, 3, 4, 5]], 0.5, atol=0.1)  # 4 sd of a share of 400 draws


# --------------------------------------------------------------------------
# 3. Group privacy and its report
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "delta", "k"), [(1.0, 0.0, 1), (1.0, 0.0, 5), (2.0, 1e-6, 4), (0.3, 1e-5, 10)])
def test_the_row_level_request_chains_back_to_the_unit_level(eps: float, delta: float, k: int) -> None:
    row = row_request(PrivacyRequest(eps=eps, delta=delta), k)
    assert row.eps == pytest.approx(eps / k) and row.se_share == 0.0
    chained = row.delta * sum(np.exp(i * row.eps) for i in range(k))  # the lemma's delta over k steps
    assert chained == pytest.approx(delta, rel=1e-12, abs=0.0)
    spent = PrivacySpent(notion="pure", eps=row.eps, split=(("a", row.eps / 4), ("b", 3 * row.eps / 4)))
    units = Units("person", np.zeros(k, dtype=int), 1, k)
    reported = unit_spent(spent, PrivacyRequest(eps=eps, delta=delta), units, grouped=True)
    assert reported.eps == eps and sum(part for _, part in reported.split) == pytest.approx(eps)
    assert "one person (at most" in reported.neighbours


def test_a_mechanism_without_clustered_intervals_reports_none_and_says_why() -> None:
    res = dpstats.dp_ols("y ~ x", _panel(), eps=2.0, bounds=BOUNDS, method="theilsen", unit="id", max_rows=5)
    assert np.all(np.isnan(res.bse)) and "independent" in res.se_note
    assert res.privacy.eps == 2.0 and sum(part for _, part in res.privacy.split) == pytest.approx(2.0)


def test_auto_chooses_a_mechanism_that_clusters_its_intervals() -> None:
    """At 300 workers of 10 rows and eps 5 the plan refuses (NoisyStats, at eps / 10 in effect, is predicted at
    16 standard errors); forced, auto still answers with clustered intervals."""
    call = {"eps": 5.0, "delta": 1e-6, "bounds": BOUNDS, "unit": "id", "max_rows": 10, "random_state": 2}
    with pytest.raises(dpstats.RefusedBeforeSpending):
        dpstats.dp_ols("y ~ x", _panel(300, 10), **call)
    res = dpstats.dp_ols("y ~ x", _panel(300, 10), force=True, **call)
    assert REGISTRY[res.method].unit_native and np.all(np.isfinite(res.bse))


# --------------------------------------------------------------------------
# 4. Tukey depth: whole units in each batch
# --------------------------------------------------------------------------


def test_replacing_one_unit_changes_exactly_one_model() -> None:
    rng = np.random.default_rng(0)
    units, k, m = 40, 3, 8
    codes = np.repeat(rng.permutation(units), k)  # the units' rows anywhere in the data
    X = np.column_stack([np.ones(units * k), rng.normal(size=units * k)])
    y = X @ [1.0, 0.5] + rng.normal(size=units * k)
    base = tukey_models.unit_partition_models(X, y, codes, units, m, np.random.default_rng(9))
    for unit in range(units):
        X2, y2 = X.copy(), y.copy()
        rows = codes == unit
        X2[rows, 1], y2[rows] = 1e3, -1e3
        moved = tukey_models.unit_partition_models(X2, y2, codes, units, m, np.random.default_rng(9))
        assert int(np.any(moved != base, axis=1).sum()) == 1


TUKEY = REGISTRY["tukey"]
# a tiny panel, with the eps and delta of tests/test_tukey_privacy.py, so that the test passes and the later
# releases are made
TUKEY_PRIVACY = PrivacyRequest(eps=40.0 / (1 - tukey_inference.DEFAULT_SHARES[0]), delta=0.3)


def _tukey_unit_pairs() -> list[NeighbourPair]:
    """20 units of 3 rows (x normal, y = 1 + 2x + noise); every row of one unit moved to far points."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    X, y = np.column_stack([np.ones(60), x]), 1.0 + 2.0 * x + rng.normal(size=60)
    units = Units("unit", np.repeat(np.arange(20), 3), 20, 3)
    wide = (-1e7, 1e7)

    def design(Xa: np.ndarray, ya: np.ndarray):
        return replace(design_from_arrays(ya, Xa, y_bounds=wide, x_bounds=[wide]), units=units)

    pairs = []
    for unit, (cx, cy) in itertools.product((0, 11, 19), [(-1e6, 1e6), (1e6, 1e6), (0.0, 0.0), (3.0, -5.0)]):
        X2, y2 = X.copy(), y.copy()
        rows = units.codes == unit
        X2[rows, 1], y2[rows] = cx + np.arange(3), cy - np.arange(3)
        pairs.append(NeighbourPair(f"unit {unit} -> ({cx:g}, {cy:g})", design(X, y), design(X2, y2)))
    return pairs + [p.swapped() for p in pairs]


def test_tukey_replay_on_unit_pairs_is_sound() -> None:
    """Every release within its sensitivity of 1 when a whole unit moves; the sampled point and the spreads
    reach it (the distance does not move on these pairs: its soundness is what is checked)."""
    report = replay(unit_level(TUKEY), _tukey_unit_pairs(), TUKEY_PRIVACY, seeds=range(4), options={"m": 20})
    report.assert_sound(min_ratio=None)
    reached = [name for name, worst in report.releases.items() if worst.max_ratio >= 0.9]
    assert tukey_mechanism.SAMPLE in reached and len(reached) == 3, report.as_text()


@contextlib.contextmanager
def _row_partition():
    """The canary: batches of rows, not of units (a unit's rows may then sit in several models)."""

    def rows_only(X, y, codes, count, m, rng, batch_fit=None):
        return tukey_models.partition_models(X, y, m, rng, batch_fit)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tukey_mechanism, "unit_partition_models", rows_only)
        yield


def test_a_row_partition_is_flagged_by_the_replay_at_the_unit_level() -> None:
    with _row_partition():
        report = replay(unit_level(TUKEY), _tukey_unit_pairs(), TUKEY_PRIVACY, seeds=range(1), options={"m": 20})
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound()


# --------------------------------------------------------------------------
# 5. The gray-box audit at the unit level
# --------------------------------------------------------------------------

HISTOGRAM = REGISTRY["histogram"]
COUNTS_ONLY = {"bins": 2, "moment_share": 0}
WORST = unit_corner_pairs(6, 3, [(0.0, 1.0)], (0.0, 1.0))[0]  # all 3 rows of a unit move to another cell


def _row_level_calibration(spec):
    """The canary: the mechanism spends the unit-level eps as if a unit were one row (no group privacy)."""

    def fit(design, privacy, rng, **options):
        return spec.fit(design, replace(privacy, se_share=0.0), rng, **options)

    return fit


def _counts_audit(fit) -> object:
    return graybox_audit(
        fit, WORST, PrivacyRequest(eps=1.5), "histogram counts", runs=50_000, seed=3, alpha=ALPHA,
        options=COUNTS_ONLY, reduce=GrayBoxSamples.laplace_log_likelihood_ratio,
    )  # fmt: skip


@pytest.mark.slow
def test_graybox_group_privacy_within_the_unit_level_claim() -> None:
    result = _counts_audit(unit_level(HISTOGRAM))
    claim = unit_claim(HISTOGRAM, 3) * result.eps_claimed
    assert claim == pytest.approx(1.5)
    assert result.eps_lb <= claim, result.as_text()
    assert result.eps_lb > 0.9, result.as_text()  # the audit sees most of the unit's privacy loss


@pytest.mark.slow
def test_graybox_flags_row_level_calibration_claimed_at_the_unit_level() -> None:
    result = _counts_audit(_row_level_calibration(HISTOGRAM))
    assert result.eps_claimed == pytest.approx(1.5)
    assert result.flagged and result.eps_lb > 2.0, result.as_text()


# --------------------------------------------------------------------------
# 6. Limits
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["noisystats", "theilsen", "gradient", "histogram", "kng", "tukey"])
def test_at_huge_eps_each_mechanism_is_its_row_level_fit(method: str) -> None:
    data = _panel()
    extra = {"delta": 1e-6} if method == "tukey" else {}
    call = {"eps": 1e9, "bounds": BOUNDS, "method": method, "random_state": 3, **extra}
    rows = dpstats.dp_ols("y ~ x", data, **call)
    units = dpstats.dp_ols("y ~ x", data, unit="id", max_rows=5, **call)
    assert units.nobs == rows.nobs == len(data)
    if method == "tukey":  # a median of batch fits: the batches differ (whole units), so within sampling error
        ols = smf.ols("y ~ x", data).fit(cov_type="cluster", cov_kwds={"groups": data["id"]})
        assert np.all(np.abs(units.params.values - rows.params.values) < ols.bse.values), (units.params, rows.params)
    else:
        np.testing.assert_allclose(units.params.values, rows.params.values, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# 7. Said where people look
# --------------------------------------------------------------------------


def test_the_unit_and_k_are_said_everywhere() -> None:
    budget = dpstats.PrivacyBudget(eps=10.0)
    res = dpstats.dp_ols(
        "y ~ x", _panel(), eps=2.0, bounds=BOUNDS, method="noisystats", unit="id", max_rows=5, budget=budget,
        random_state=4,
    )  # fmt: skip
    said = "one id (at most 5 rows; 60 units)"
    assert said in res.summary().as_text() and said in res.summary().as_latex()
    assert said in res.glance()["neighbours"].iloc[0]
    assert said in res.to_dict()["privacy"]["neighbours"]
    assert said in dpstats.table([res]).as_text()
    assert budget.ledger["unit"].tolist() == ["id"] and "every row of one id" in budget.describe_spending()
    dpstats.dp_ols("y ~ x", _panel(), eps=1.0, bounds=BOUNDS, method="noisystats", budget=budget)
    assert budget.ledger["unit"].tolist() == ["id", "row"] and "protect one row" in budget.describe_spending()


def test_the_plan_reads_the_unit_and_auto_refuses_before_spending_where_it_fails() -> None:
    """A median at the unit level on 300 workers of 10 rows at eps 5 (two quantiles: 2.5 each): Tukey, the one
    candidate, is predicted to fail (at most one batch per unit), and the refusal's plan says so."""
    budget = dpstats.PrivacyBudget(eps=10.0, delta=1e-5)
    with pytest.raises(dpstats.RefusedBeforeSpending) as refused:
        dpstats.dp_quantreg(
            "y ~ x", _panel(300, 10), q=[0.25, 0.5], eps=5.0, delta=1e-6, bounds=BOUNDS, unit="id", max_rows=10,
            budget=budget,
        )  # fmt: skip
    assert "up to 10 rows (300 units)" in str(refused.value.plan)
    assert list(refused.value.plan.table["method"]) == ["tukey (median)"]
    assert budget.ledger.empty
    plan = dpstats.compare_methods("y ~ x", n=3000, eps=5.0, bounds=BOUNDS, delta=1e-6, max_rows=10, units=300)
    compared = set(plan.table["method"])
    assert "tukey" in compared <= {"tukey", "noisystats", "noisystats (repaired)"}  # the unit-native ones


def test_no_key_can_make_the_call_raise_and_a_huge_max_rows_costs_nothing() -> None:
    """Attacker's inputs: a list in a key cell (unhashable) is a key like any other, row-wise; max_rows = 10^12
    is a public number whose group-privacy chain is computed in closed form (no array of its length)."""
    data = _panel(20, 3)
    data["id"] = data["id"].astype(object)
    data.at[0, "id"] = [1, 2]
    data.at[1, "id"] = [1, 2]
    res = dpstats.dp_ols("y ~ x", data, eps=1.0, bounds=BOUNDS, method="noisystats", unit="id", max_rows=2)
    assert res.nobs == 20 * 2 + 1 and "21 units" in res.privacy.neighbours  # unit 0 split: its list rows and the rest
    huge = dpstats.dp_ols(
        "y ~ x", data, eps=1.0, delta=1e-6, bounds=BOUNDS, method="gradient", variant="approx", unit="id",
        max_rows=10**12,
    )  # fmt: skip
    assert huge.nobs == len(data) and huge.privacy.eps == 1.0 and huge.privacy.delta == 1e-6


GRADIENT = REGISTRY["gradient"]
GRADIENT_OPTIONS = {"variant": "pure", "T": 2, "tau": 0.1}


def _gradient_unit_pair() -> NeighbourPair:
    """3 units of 3 rows at (0.5, 0.5), the last unit's 3 rows moved from (0, 1) to (0, 0)."""
    base = np.full((9, 2), 0.5)
    units = Units("unit", np.repeat(np.arange(4), 3), 4, 3)
    d, d_prime = (
        replace(design_from_points(np.vstack([base, np.tile(last, (3, 1))]), [(0.0, 1.0)], (0.0, 1.0)), units=units)
        for last in ([0.0, 1.0], [0.0, 0.0])
    )
    return NeighbourPair("3 x 3 rows at (.5, .5), the last unit (0, 1) -> (0, 0)", d, d_prime)


def _gradient_audit(fit) -> object:
    return graybox_audit(
        fit, _gradient_unit_pair(), PrivacyRequest(eps=3.0), "gradient[0]", runs=50_000, seed=3, alpha=ALPHA,
        options=GRADIENT_OPTIONS, reduce=GrayBoxSamples.corner_event,
    )  # fmt: skip


@pytest.mark.slow
def test_graybox_gradient_round_within_the_unit_level_claim() -> None:
    """eps = 3 at the unit level over T = 2 rounds: each round claims 1.5 for a unit of 3 rows (0.5 a row)."""
    result = _gradient_audit(unit_level(GRADIENT))
    claim = unit_claim(GRADIENT, 3) * result.eps_claimed
    assert claim == pytest.approx(1.5)
    assert 0.8 < result.eps_lb <= claim, result.as_text()


@pytest.mark.slow
def test_graybox_gradient_row_level_calibration_is_flagged_at_the_unit_level() -> None:
    result = _gradient_audit(_row_level_calibration(GRADIENT))
    assert result.eps_claimed == pytest.approx(1.5)
    assert result.flagged, result.as_text()


def test_several_quantiles_fit_the_same_kept_rows_with_tukey_batches_of_whole_units() -> None:
    data = pd.concat([_panel(600, 4, seed=3), pd.DataFrame({"id": 999, "x": np.zeros(30), "y": np.zeros(30)})])
    fits = dpstats.dp_quantreg(
        "y ~ x", data, q=[0.25, 0.75], eps=20.0, delta=1e-5, bounds=BOUNDS, method="tukey", unit="id", max_rows=3,
        random_state=8,
    )  # fmt: skip
    assert [fit.nobs for fit in fits.fits] == [601 * 3, 601 * 3]
    assert all("one id (at most 3 rows; 601 units)" in fit.privacy.neighbours for fit in fits.fits)
    assert not any(fit.failed for fit in fits.fits)
