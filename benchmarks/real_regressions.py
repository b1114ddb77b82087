"""The public regressions the real-data benchmarks and the error model's real calibration run (issues 28 and 42).

Textbook regressions on data shipped with the dependencies, with bounds and levels taken from the data's
documentation, never from the rows:

* engel (statsmodels; Koenker & Bassett 1982): food expenditure on income, 235 households; least squares and
  the median.
* fair (statsmodels; Fair 1978): affairs on age, years married, education and religiousness, 6,366 women
  (benchmarks/bench_limits.py's declarations).
* grunfeld (statsmodels; Grunfeld 1958): investment on market value and capital, 220 firm-years.
* CPS1985 (AER; Berndt 1991): the Mincer equation, log hourly wage on education, experience, its square and
  gender, 534 workers (vignettes/01_paper_workflow.md's declarations).
* CPS1988 (AER; Bierens & Ginther 2001, Kleiber & Zeileis 2008, section 3.3): log weekly wage on experience, its
  square, education and ethnicity, 28,155 men; least squares and the median.
* PSID1976 (AER; Mroz 1987, Wooldridge 2010, example 15.1): log hourly wage of the 428 working women on
  education, experience and its square.
* HousePrices (AER; Anglin & Gencay 1996): log price on log lot size, rooms, stories, garage places and six
  yes/no amenities, 546 houses.
* CASchools (AER; Stock & Watson 2007, chapter 7): district test scores on pupils per teacher, the share of
  English learners and the share on free or reduced-price lunch, 420 districts (added in issue 42).
* CPSSW8 (AER; Stock & Watson 2007): log hourly earnings on schooling, age, its square, gender and four regions,
  61,395 full-time workers (added in issue 42).
* SwissLabor (AER; Gerfin 1996): a linear probability model of labour-force participation on non-labour income,
  age, its square, schooling, young and old children and nationality, 872 women (added in issue 45: a binary
  outcome with many coefficients, where the bias labels were on nearly every fit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import statsmodels.api as sm
from bench_limits import ENGEL, ENGEL_BOUNDS, FAIR, FAIR_BOUNDS, FAIR_LEVELS

from dpstats.demo import SURVEY_BOUNDS, SURVEY_FORMULA, SURVEY_LEVELS

YES_NO = ["no", "yes"]


@dataclass(frozen=True)
class Regression:
    """One public regression: its data, formula, declarations and the estimators it is run with."""

    name: str
    load: Callable[[], pd.DataFrame]
    formula: str
    bounds: dict
    levels: dict | None = None
    estimators: tuple[str, ...] = ("ols",)
    median_formula: str | None = None
    one_regressor: bool = False
    notes: dict = field(default_factory=dict)


def _aer(name: str) -> pd.DataFrame:
    """An AER data set through rpy2 (Debian's r-cran-aer, installed by scripts/setup.sh)."""
    from dpstats import r_interop

    ro = r_interop.start_r()
    ro.r(f'data("{name}", package = "AER")')
    return r_interop.r_to_pandas(ro.r[name])


def _psid1976() -> pd.DataFrame:
    data = _aer("PSID1976")
    return data[data["participation"] == "yes"].reset_index(drop=True)  # Mroz's wage equation: working women


def _swisslabor() -> pd.DataFrame:
    """AER's SwissLabor with participation as 0/1 (a row-wise map of a public column)."""
    data = _aer("SwissLabor")
    return data.assign(works=(data["participation"] == "yes").astype(float))


def _caschools() -> pd.DataFrame:
    """AER's CASchools with Stock & Watson's test score (the mean of reading and maths) and pupils per teacher,
    row-wise maps of public columns."""
    data = _aer("CASchools")
    return data.assign(score=(data["read"] + data["math"]) / 2, stratio=data["students"] / data["teachers"])


MINCER_1985 = "np.log(wage) ~ education + experience + I(experience**2 / 100) + C(gender)"
CPS1988 = "np.log(wage) ~ experience + I(experience**2 / 100) + education + C(ethnicity)"
HOUSES = (
    "np.log(price) ~ np.log(lotsize) + bedrooms + bathrooms + stories + garage + C(driveway) + C(recreation)"
    " + C(fullbase) + C(gasheat) + C(aircon) + C(prefer)"
)
SWISS = "works ~ income + age + I(age**2) + education + youngkids + oldkids + C(foreign)"
REGRESSIONS = (
    Regression("engel", lambda: sm.datasets.engel.load_pandas().data, ENGEL, ENGEL_BOUNDS,
               estimators=("ols", "quantreg"), median_formula=ENGEL, one_regressor=True),
    Regression("fair", lambda: sm.datasets.fair.load_pandas().data, FAIR, FAIR_BOUNDS, FAIR_LEVELS),
    Regression("grunfeld", lambda: sm.datasets.grunfeld.load_pandas().data, "invest ~ value + capital",
               {"invest": (0, 1600), "value": (0, 6500), "capital": (0, 2300)}),
    Regression("CPS1985", lambda: _aer("CPS1985"), MINCER_1985,
               {"wage": (1, 50), "education": (0, 18), "experience": (0, 60)}, {"gender": ["male", "female"]}),
    # weekly wages of men 18-70 above $50 a year-week; experience = age - education - 6 over ages 18-70
    Regression("CPS1988", lambda: _aer("CPS1988"), CPS1988,
               {"wage": (50, 20000), "education": (0, 18), "experience": (-6, 64)}, {"ethnicity": ["cauc", "afam"]},
               estimators=("ols", "quantreg"), median_formula=CPS1988),
    # 1975 hourly wages; education in years (PSID: at most 17); experience of women aged 30-60
    Regression("PSID1976", _psid1976, "np.log(wage) ~ education + experience + I(experience**2)",
               {"wage": (0.1, 30), "education": (0, 17), "experience": (0, 45)}),
    # Windsor (Ontario) sales of 1987: prices in Canadian dollars, lots in square feet
    Regression("HousePrices", lambda: _aer("HousePrices"), HOUSES,
               {"price": (10_000, 250_000), "lotsize": (1000, 20_000), "bedrooms": (1, 6), "bathrooms": (1, 4),
                "stories": (1, 4), "garage": (0, 3)},
               {k: YES_NO for k in ("driveway", "recreation", "fullbase", "gasheat", "aircon", "prefer")}),
    # Stock & Watson (2007), chapter 7: district test scores on class size, English learners and lunch support;
    # Stanford 9 scaled scores of 5th graders, 10-30 pupils per teacher, both shares in percent
    Regression("CASchools", _caschools, "score ~ stratio + english + lunch",
               {"score": (600, 720), "stratio": (10, 30), "english": (0, 100), "lunch": (0, 100)}),
    # Stock & Watson's March CPS of 2004: full-time workers aged 21-64 (AER's ?CPSSW8), hourly earnings in
    # 2004 dollars, years of schooling
    Regression("CPSSW8", lambda: _aer("CPSSW8"), SURVEY_FORMULA, SURVEY_BOUNDS, SURVEY_LEVELS),  # the demo's
    # Gerfin (1996): Swiss women aged 20-62 in 1981; income the log of non-labour income, age in decades,
    # schooling in years, children under 7 and over 7
    Regression("SwissLabor", _swisslabor, SWISS,
               {"works": (0, 1), "income": (6, 14), "age": (2, 6.5), "education": (0, 21), "youngkids": (0, 3),
                "oldkids": (0, 6)}, {"foreign": YES_NO}),
)  # fmt: skip
