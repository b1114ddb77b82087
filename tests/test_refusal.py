"""Refusing before spending (dpstats/planning/refusal.py): auto declines, from public facts only, a call whose
best mechanism the plan predicts to miss the user's target (or to err by more than 10 non-private standard
errors, or to fail more often than not); nothing is read and nothing is charged. force=True or an explicit
method fits anyway and says so. Deterministic: the verdicts are functions of public facts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.datasets import engel

import dpstats
from dpstats.cli import main as cli_main
from dpstats.planning.error_model import Prediction
from dpstats.planning.facts import PublicFacts
from dpstats.planning.refusal import MAX_REL, RefusedBeforeSpending, check_target, verdict

FORMULA = "foodexp ~ income"
README_BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2400)}
"""Not a calibrated real design (README_BOUNDS are: dpstats/planning/tables.py), so that these tests of the
refusal's mechanics read the synthetic family, whose predictions fall with eps to any target."""
TARGET = 0.05  # in foodexp per unit of income: auto's Theil-Sen is predicted at 0.078 at eps = 1 (n = 235)


READS: list[str] = []


class RecordingFrame(pd.DataFrame):
    """A DataFrame that records every way of reading its cells (its schema, len and column names, is free)."""

    @property
    def _constructor(self) -> type:
        return pd.DataFrame  # what pandas derives from it is a plain frame

    def __getitem__(self, key: object) -> object:
        READS.append(f"[{key!r}]")
        return super().__getitem__(key)

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        READS.append("__array__")
        return super().__array__(*args, **kwargs)

    @property
    def values(self) -> np.ndarray:  # type: ignore[override]
        READS.append("values")
        return super().values

    @property
    def loc(self) -> object:  # type: ignore[override]
        READS.append("loc")
        return super().loc

    @property
    def iloc(self) -> object:  # type: ignore[override]
        READS.append("iloc")
        return super().iloc


_READERS = ("to_numpy", "items", "iterrows", "itertuples", "get", "copy", "astype", "to_dict", "filter", "pipe")


def _recording(name: str):
    def method(self: RecordingFrame, *args: object, **kwargs: object) -> object:
        READS.append(name)
        return getattr(pd.DataFrame, name)(self, *args, **kwargs)

    return method


for _name in _READERS:
    setattr(RecordingFrame, _name, _recording(_name))


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return engel.load_pandas().data


def test_a_refusal_reads_no_value_and_a_fit_would(data: pd.DataFrame) -> None:
    READS.clear()
    with pytest.raises(RefusedBeforeSpending) as refused:
        dpstats.dp_ols(FORMULA, RecordingFrame(data), eps=1.0, bounds=BOUNDS, target=TARGET, random_state=0)
    assert READS == []
    assert "theilsen" in refused.value.reason and refused.value.plan.chosen == "theilsen"
    plan = dpstats.compare_methods(FORMULA, len(data), eps=1.0, bounds=BOUNDS, target=TARGET).table
    needed = float(plan.loc[plan["method"] == "theilsen", "eps needed"].iloc[0])
    assert f"eps >= {needed:.3g}" in str(refused.value)  # the plan says what would do
    dpstats.dp_ols(FORMULA, RecordingFrame(data), eps=1.0, bounds=BOUNDS, method="noisystats", random_state=0)
    assert READS, "the control: a fit reads the cells, so the check above could fail"


def test_a_refusal_charges_nothing_and_the_plans_eps_fits(data: pd.DataFrame) -> None:
    budget = dpstats.PrivacyBudget(eps=10)
    with pytest.raises(RefusedBeforeSpending):
        dpstats.dp_ols(FORMULA, data, eps=1.0, bounds=BOUNDS, target=TARGET, budget=budget, random_state=0)
    assert budget.spent["eps"] == 0 and len(budget.ledger) == 0
    needed = dpstats.compare_methods(FORMULA, len(data), eps=1.0, bounds=BOUNDS, target=TARGET).table
    eps = float(needed.loc[needed["method"] == "theilsen", "eps needed"].iloc[0])
    res = dpstats.dp_ols(FORMULA, data, eps=eps, bounds=BOUNDS, target=TARGET, budget=budget, random_state=0)
    assert res.plan_note is None and budget.spent["eps"] == pytest.approx(eps)


def test_force_and_an_explicit_method_fit_and_say_so(data: pd.DataFrame) -> None:
    common = dict(eps=1.0, bounds=BOUNDS, target=TARGET, random_state=0)
    forced = dpstats.dp_ols(FORMULA, data, force=True, **common)
    assert forced.method == "theilsen" and f"above target={TARGET}" in forced.plan_note
    assert "plan advised against it" in dict(forced.summary().model)["Status"]
    explicit = dpstats.dp_ols(FORMULA, data, method="histogram", **common)
    assert explicit.plan_note.startswith("histogram is predicted to err by")
    assert dpstats.dp_ols(FORMULA, data, method="histogram", eps=1.0, bounds=BOUNDS).plan_note is None


def test_the_default_rule_lets_the_readme_demo_fit(data: pd.DataFrame) -> None:
    res = dpstats.dp_ols(FORMULA, data, eps=1.0, bounds=README_BOUNDS, random_state=2026)
    assert res.method == "theilsen" and res.plan_note is None


def _facts() -> PublicFacts:
    return PublicFacts(
        n=500, eps=1.0, delta=0.0, estimator="ols", intercept=True, slopes=1, block_sizes=(), variables=1,
        unit=(2.0,), term_names=("x",), dummy=(False,),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("rel", "failure", "target", "refused"),
    [
        (MAX_REL * 0.99, 0.0, None, False),
        (MAX_REL * 1.01, 0.0, None, True),
        (1.0, 0.51, None, True),
        (1.0, 0.49, None, False),
        (50.0, 0.0, 0.21, False),  # a target replaces the default rule: dev 0.1 x unit 2 = 0.2 <= 0.21
        (1.0, 0.0, 0.19, True),
    ],
)
def test_the_three_rules(rel: float, failure: float, target: float | None, refused: bool) -> None:
    prediction = Prediction("m", dev=(0.1, 0.1, 0.1), rel=(rel, rel, rel), failure=failure)
    assert (verdict(prediction, _facts(), target) is not None) == refused


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "0.1"])
def test_a_target_is_a_positive_finite_number(bad: object) -> None:
    with pytest.raises(ValueError, match="target"):
        check_target(bad)


def test_force_is_a_bool_and_a_grouped_target_judges_each_groups_auto(data: pd.DataFrame) -> None:
    """A grouped fit takes a target with method='auto' only; with public sizes that leave no group a mechanism
    within it the call is refused before spending; with noisy sizes each group is refused on its own."""
    with pytest.raises(ValueError, match="force"):
        dpstats.dp_ols(FORMULA, data, eps=1.0, bounds=BOUNDS, force="yes")
    grouped = data.assign(g=np.where(data.income > 700, "hi", "lo"))
    call = dict(eps=1.0, bounds=BOUNDS, by="g", groups=["hi", "lo"], target=0.04)  # Theil-Sen: 0.056 and 0.088
    with pytest.raises(ValueError, match="judges each group's choice"):
        dpstats.dp_ols(FORMULA, grouped, method="theilsen", **call)
    sizes = grouped["g"].value_counts().to_dict()
    with pytest.raises(ValueError, match="every group is refused before spending"):
        dpstats.dp_ols(FORMULA, grouped, group_sizes=sizes, **call)
    res = dpstats.dp_ols(FORMULA, grouped, random_state=1, **call)
    assert res.failed.all() and "above" not in res["hi"].reason and "target=0.04" in res["hi"].reason


def test_the_command_line_refuses_without_a_traceback(data: pd.DataFrame, tmp_path, capsys) -> None:
    path = tmp_path / "engel.csv"
    data.to_csv(path, index=False)
    args = ["ols", FORMULA, "--data", str(path), "--eps", "1", "--bounds", "income=0:5000", "--bounds"]
    code = cli_main([*args, "foodexp=0:2500", "--target", str(TARGET), "--seed", "1"])
    err = capsys.readouterr().err
    assert code != 0 and "refused before spending" in err and "Traceback" not in err
    assert cli_main([*args, "foodexp=0:2500", "--target", str(TARGET), "--seed", "1", "--force"]) == 0
    assert "plan advised against it" in capsys.readouterr().out


def test_auto_given_delta_may_choose_a_pure_mechanism_and_reports_no_delta(data: pd.DataFrame) -> None:
    """At eps = 1e9 the plan prefers a pure mechanism to Tukey: it runs with delta 0 (it was refused before)."""
    res = dpstats.dp_ols(FORMULA, data, eps=1e9, delta=1e-6, bounds=BOUNDS, random_state=0)
    assert res.method != "tukey" and res.privacy.notion == "pure" and res.privacy.delta == 0.0
