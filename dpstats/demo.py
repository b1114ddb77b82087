"""``dpstats demo``: DP OLS at survey scale and on a small cell, each next to the non-private fit.

First a survey: AER's ``CPSSW8`` (Stock & Watson's Current Population Survey
extract: 61,395 full-time workers aged 21-64, hourly earnings in 2004 dollars),
read through R (Debian's r-cran-aer, which scripts/setup.sh installs), and a
Mincer wage equation at eps = :data:`SURVEY_EPS`: at tens of thousands of rows
the privacy noise is a small part of the answer. Then statsmodels' ``engel``
data set (Engel 1857: annual household income and food expenditure of 235
Belgian working-class households, in Belgian francs), where it is not. Both
are public, which is what makes the non-private comparison printable at all:
with confidential data only the DP release could be shown.

The bounds are declared from public knowledge, as they must be, not read from
the data (see :data:`JUSTIFICATION` and :data:`SURVEY_JUSTIFICATION`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

FORMULA = "foodexp ~ income"
BOUNDS: dict[str, tuple[float, float]] = {"income": (0.0, 5000.0), "foodexp": (0.0, 2500.0)}
JUSTIFICATION = (
    "Public justification of the bounds (declared without looking at the data): the survey covers "
    "working-class households, whose annual income we take to lie in [0, 5000] Belgian francs; food "
    "expenditure is non-negative and is taken to be at most half of that income ceiling, [0, 2500] francs."
)
SURVEY_FORMULA = "np.log(earnings) ~ education + age + I(age**2 / 100) + C(gender) + C(region)"
SURVEY_BOUNDS: dict[str, tuple[float, float]] = {
    "earnings": (2.0, 100.0),
    "education": (0.0, 20.0),
    "age": (21.0, 64.0),
}
SURVEY_LEVELS = {"gender": ["male", "female"], "region": ["Northeast", "Midwest", "South", "West"]}
SURVEY_EPS = 5.0
"""The survey fit's budget (the demo's ``eps`` is the small cell's)."""
SURVEY_JUSTIFICATION = (
    "Public justification of the bounds: the survey's population is full-time workers aged 21 to 64 (its "
    "documentation), so age lies in [21, 64]; years of schooling in [0, 20]; hourly earnings in 2004 dollars "
    "in [2, 100] (a full-time worker below $2 or above $100 an hour is clipped to the bound)."
)
NON_PRIVATE_LABEL = "NON-PRIVATE comparison: statsmodels OLS on the same data (no privacy)"
NON_PRIVATE_NOTE = (
    "Shown only because these data are public; with confidential data only the DP release above may be published."
)


def load_engel() -> pd.DataFrame:
    """Statsmodels' public engel data: columns income and foodexp, n = 235."""
    from statsmodels.datasets import engel

    return engel.load_pandas().data


def load_survey() -> pd.DataFrame:
    """AER's public CPSSW8 through the embedded R (dpstats/r_interop/embedded.py)."""
    from .r_interop import r_to_pandas, start_r

    ro = start_r()
    ro.r('data("CPSSW8", package = "AER")')
    return r_to_pandas(ro.r["CPSSW8"])


def non_private_fit(data: pd.DataFrame, formula: str = FORMULA) -> pd.DataFrame:
    """Ordinary statsmodels OLS of ``formula`` (coefficients and standard errors)."""
    import numpy as np  # noqa: F401 (the formula's np.log is read in this frame: eval_env=0)
    import pandas as pd
    import statsmodels.formula.api as smf

    fit = smf.ols(formula, data, eval_env=0).fit()
    return pd.DataFrame({"coef": fit.params, "std err": fit.bse})


def _header(title: str, fmt: str) -> str:
    if fmt == "markdown":
        return f"### {title}"
    if fmt == "latex":
        return f"% {title}"
    return f"{title}\n{'=' * len(title)}"


def _table(frame: pd.DataFrame, fmt: str) -> str:
    if fmt == "latex":
        from .output.render import latex_escape

        lines = [r"\begin{tabular}{lrr}", r"\toprule", r" & coef & std err \\", r"\midrule"]
        lines += [f"{latex_escape(str(t))} & {r['coef']:.4f} & {r['std err']:.4f} \\\\" for t, r in frame.iterrows()]
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines)
    if fmt == "markdown":
        lines = ["| | coef | std err |", "|---|---:|---:|"]
        lines += [f"| {t} | {r['coef']:.4f} | {r['std err']:.4f} |" for t, r in frame.iterrows()]
        return "\n".join(lines)
    return frame.to_string(float_format=lambda v: f"{v:.4f}")


def _comment(text: str, fmt: str) -> str:
    return f"% {text}" if fmt == "latex" else text


def run_demo(eps: float = 1.0, seed: int | None = None, fmt: str = "text") -> str:
    """Fit the survey's wage equation at :data:`SURVEY_EPS` and ``foodexp ~ income`` on engel at ``eps``, each
    with DP and without; return the report.

    ``seed`` is the noise seed of both fits (None: fresh OS randomness) and ``fmt`` one of ``text``,
    ``latex``, ``markdown``, ``json``.
    """
    from .api.estimators import dp_ols
    from .output.render import FORMATS, dumps, render

    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}")
    survey = load_survey()
    survey_res = dp_ols(
        SURVEY_FORMULA, survey, eps=SURVEY_EPS, bounds=SURVEY_BOUNDS, levels=SURVEY_LEVELS, random_state=seed
    )
    survey_ols = non_private_fit(survey, SURVEY_FORMULA)
    data = load_engel()
    res = dp_ols(FORMULA, data, eps=eps, bounds=BOUNDS, random_state=seed)
    ols = non_private_fit(data)

    if fmt == "json":
        report: dict[str, Any] = {
            "survey": {
                "data": f"AER's CPSSW8 (public), n = {len(survey)}",
                "bounds_justification": SURVEY_JUSTIFICATION,
                "dp": survey_res.to_dict(),
                "non_private": _non_private_json(survey_ols),
            },
            "data": "statsmodels.datasets.engel (public), n = 235",
            "bounds_justification": JUSTIFICATION,
            "dp": res.to_dict(),
            "non_private": _non_private_json(ols),
        }
        return dumps(report)

    survey_intro = (
        f"dpstats demo, at survey scale: dp_ols({SURVEY_FORMULA!r}, CPSSW8, eps={SURVEY_EPS:g}) on AER's public "
        f"Current Population Survey extract (n = {len(survey):,} full-time workers)."
    )
    intro = (
        f"Then a small cell: dp_ols({FORMULA!r}, engel, eps={eps:g}) on statsmodels' public engel data "
        f"(n = 235 Belgian households, 1857)."
    )
    parts = [
        _comment(survey_intro, fmt),
        _comment(SURVEY_JUSTIFICATION, fmt),
        "",
        render(survey_res, fmt),
        "",
        _header(NON_PRIVATE_LABEL, fmt),
        _table(survey_ols, fmt),
        _comment(
            f"At {len(survey):,} rows the privacy noise is a small part of the answer: method='auto' chose "
            f"{survey_res.method}, and its intervals carry the noise.",
            fmt,
        ),
        "",
        _comment(intro, fmt),
        _comment(JUSTIFICATION, fmt),
        "",
        render(res, fmt),
        "",
        _header(NON_PRIVATE_LABEL, fmt),
        _table(ols, fmt),
        _comment(NON_PRIVATE_NOTE, fmt),
        _comment(
            "The DP estimate differs from OLS by the privacy noise (and any clipping). With n = 235 that "
            f"noise is large at eps = 1. method='auto' chose {res.method} (the error model's prediction from "
            "public facts: dpstats.compare_methods); rerun with another --seed to see the noise's spread, or "
            "with a larger --eps to see the DP fit approach OLS.",
            fmt,
        ),
    ]
    return "\n".join(parts)


def _non_private_json(ols: pd.DataFrame) -> dict[str, Any]:
    return {
        "label": NON_PRIVATE_LABEL,
        "note": NON_PRIVATE_NOTE,
        "terms": list(ols.index),
        "params": ols["coef"].tolist(),
        "bse": ols["std err"].tolist(),
    }
