"""A weighted fit says so everywhere it goes (issue 41): its summary, tidy/glance, paper tables and the ledger.

Seeded DP Newton logits on simulated survey rows; what is checked is the wording and the plumbing, never a
number that noise could move (no false failures).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.output.maketables import maketables_rows
from dpstats.privacy.budget import PrivacyBudget
from dpstats.report.tables import ReleasedFit
from dpstats.results.regression import survey_design

STRATA, PSUS = ["a", "b", "c"], ["1", "2", "3", "4"]
BOUNDS = {"x": (-4.0, 4.0), "wt": (0.0, 5.0)}
LEVELS = {"st": STRATA, "psu": PSUS}
DESIGN = {"weights": "wt", "cluster": "psu", "strata": "st"}


@pytest.fixture(scope="module")
def survey() -> pd.DataFrame:
    """3,000 rows of a stratified two-stage sample with unequal weights and a logit response."""
    rng = np.random.default_rng(41)
    n = 3000
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "st": rng.choice(STRATA, n),
            "psu": rng.choice(PSUS, n),
            "wt": rng.uniform(0.5, 5.0, n),
        }
    )
    frame["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-frame["x"]))).astype(int)
    return frame


def fit(data: pd.DataFrame, **design: str) -> dpstats.DPRegressionResults:
    """A seeded DP Newton logit, weighted by ``design`` (none: unweighted)."""
    bounds = BOUNDS if design else {"x": BOUNDS["x"]}
    return dpstats.dp_logit(
        "y ~ x", data, eps=2, bounds=bounds, levels=LEVELS, method="newton", random_state=3, **design
    )


def test_the_design_in_words() -> None:
    assert survey_design({"steps": 5}) is None
    assert survey_design({"weights": "wt"}) == "wt; PSUs: rows"
    assert survey_design({"weights": "wt", "cluster": "psu"}) == "wt; PSUs: psu"
    assert survey_design(DESIGN) == "wt; PSUs: psu within strata st"
    assert survey_design({"weights": "wt", "strata": "st"}) == "wt; PSUs: rows within strata st"


def test_the_summary_has_a_weights_line(survey: pd.DataFrame) -> None:
    res = fit(survey, **DESIGN)
    assert res.survey == "wt; PSUs: psu within strata st"
    model = dict(res.summary().model)
    assert model["Weights"] == "wt; PSUs: psu within strata st"
    hyper = dict(res.summary().privacy)["Hyperparameters"]
    assert "weights" not in hyper and "cluster" not in hyper  # named once, on the design's own line
    assert "Weights               wt; PSUs: psu within strata st" in res.summary().as_text()
    plain = fit(survey)
    assert plain.survey is None and "Weights" not in dict(plain.summary().model)


def test_glance_names_the_design(survey: pd.DataFrame) -> None:
    row = fit(survey, **DESIGN).glance().iloc[0]
    assert (row["weights"], row["cluster"], row["strata"]) == ("wt", "psu", "st")
    row = fit(survey, weights="wt").glance().iloc[0]
    assert row["weights"] == "wt" and row["cluster"] is None and row["strata"] is None
    row = fit(survey).glance().iloc[0]
    assert row["weights"] is None
    assert fit(survey, **DESIGN).tidy()["term"].tolist() == ["Intercept", "x"]


def test_paper_tables_have_weights_and_psu_rows(survey: pd.DataFrame) -> None:
    fits = [fit(survey, **DESIGN), fit(survey, weights="wt"), fit(survey)]
    frame = dpstats.table(fits).to_frame()
    assert frame.loc[("Weights", "")].tolist() == ["wt", "wt", "none"]
    assert frame.loc[("PSUs", "")].tolist() == ["psu within st", "rows", "-"]
    text = dpstats.table(fits).as_text()
    assert "(1), (2): weighted by the survey weights; design-based" in text.replace("\n", " ")
    rows = dpstats.table([fits[2]]).to_frame().index.get_level_values("row")
    assert "Weights" not in rows and "PSUs" not in rows
    released = [ReleasedFit.from_dict(f.to_dict()) for f in fits]  # as a fit sent from R arrives
    assert dpstats.table(released).to_frame().loc[["Weights", "PSUs"]].equals(frame.loc[["Weights", "PSUs"]])
    assert r"Weights & wt & wt & none \\" in dpstats.table(fits).as_latex()


def test_maketables_rows_name_the_weights(survey: pd.DataFrame) -> None:
    assert maketables_rows([fit(survey, **DESIGN), fit(survey)])["Weights"] == ["wt", "none"]
    assert "Weights" not in maketables_rows([fit(survey)])


def test_the_ledger_names_the_design(survey: pd.DataFrame, tmp_path: Path) -> None:
    budget = PrivacyBudget(eps=10)
    dpstats.dp_logit(
        "y ~ x", survey, eps=2, bounds=BOUNDS, levels=LEVELS, method="newton", random_state=3, budget=budget, **DESIGN
    )
    dpstats.dp_logit("y ~ x", survey, eps=2, bounds=BOUNDS, method="newton", random_state=3, budget=budget)
    assert budget.ledger["weights"].tolist() == ["wt; PSUs: psu within strata st", None]
    budget.save(tmp_path / "budget.json")
    again = PrivacyBudget.load(tmp_path / "budget.json")
    assert again.ledger["weights"].tolist() == ["wt; PSUs: psu within strata st", None]
