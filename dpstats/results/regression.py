"""Results of a DP regression: statsmodels names, broom frames, summaries.

Everything here is post-processing of a mechanism's :class:`Release`: it
costs no privacy and never touches the data. The object is immutable, holds
no array of length n, and pickles to public values only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..frontend.formula import FormulaSpec, design_for_new_data
from ..glm.at_fit import AtFit
from ..glm.links import LINKS, get_link
from ..mechanisms.base import Release
from ..output.maketables import MakeTablesPlugin
from ..output.render import Summary
from ..privacy.accounting import PrivacySpent
from ..uncertainty import bias as bias_rule
from ..uncertainty.intervals import check_alpha, law, wald_test, z_statistics
from .margins import DPMargins


@dataclass(frozen=True)
class FTest:
    """A joint test of linear restrictions on the coefficients, from the release alone.

    ``statistic`` is the Wald F (W / df) with the release's covariance;
    ``pvalue`` comes from the release's bootstrap law (``reference`` =
    "bootstrap") or from chi2_df / df ("chi2"); see
    :func:`dpstats.uncertainty.intervals.wald_test`.
    """

    hypothesis: str
    statistic: float
    df: int
    pvalue: float
    reference: str

    def __str__(self) -> str:
        return f"F({self.df}) = {self.statistic:.4g}, p = {self.pvalue:.4g} [{self.reference}] for {self.hypothesis}"


@dataclass(frozen=True)
class DPRegressionResults(MakeTablesPlugin):
    """A fitted DP regression (statsmodels-like, with broom-style frames).

    Standard errors, tests and intervals cover the sampling error and the
    privacy noise; ``se_note`` says how the mechanism obtained them. Standard
    errors come from ``cov_params()``. Every test and interval comes from one
    law (``inference``): the bootstrap's where the release carries replicates
    (intervals basic or percentile, p-values that invert them, F tests against
    the replicates' departures), the normal and chi-square otherwise; an
    estimate always lies inside its own interval (dpstats/uncertainty/intervals.py).
    z and p are NaN where the standard error is not finite; intervals are NaN
    where a mechanism reports no standard error and infinite where the release
    they need failed. ``maketables.ETable`` takes it as a column
    (dpstats/output/maketables.py).
    """

    estimator: str
    spec: FormulaSpec
    y_name: str
    method: str
    method_title: str
    citation: str
    method_reason: str | None
    nobs: int
    privacy: PrivacySpent
    failed: bool
    reason: str | None
    se_note: str
    declared_bounds: Mapping[str, tuple[float, float]]
    hyperparameters: Mapping[str, object]
    _params: np.ndarray = field(repr=False)
    _cov: np.ndarray = field(repr=False)
    _noisy_stats: Mapping[str, np.ndarray] = field(repr=False)
    _replicates: np.ndarray | None = field(default=None, repr=False)
    interval: str = "basic"
    plan_note: str | None = None
    bias_source: str | None = None
    """The bias the estimate keeps, in words (None: none); ``bias`` bounds it per coefficient."""
    _bias_bound: np.ndarray | None = field(default=None, repr=False)
    at_fit: AtFit | None = field(default=None, repr=False)
    """A binary fit's released averages at its coefficients (marginal effects), None otherwise."""

    # statsmodels names --------------------------------------------------

    @classmethod
    def from_release(
        cls,
        release: Release,
        *,
        estimator: str,
        spec: FormulaSpec,
        y_name: str,
        method: str,
        method_title: str,
        citation: str,
        nobs: int,
        declared_bounds: Mapping[str, tuple[float, float]],
        hyperparameters: Mapping[str, object] | None = None,
        method_reason: str | None = None,
        plan_note: str | None = None,
        at_fit: AtFit | None = None,
    ) -> DPRegressionResults:
        """The one way a result is made: from a mechanism's release and the call's public facts."""
        return cls(
            estimator=estimator,
            spec=spec,
            y_name=y_name,
            method=method,
            method_title=method_title,
            citation=citation,
            method_reason=method_reason,
            nobs=nobs,
            privacy=release.privacy,
            failed=release.failed,
            reason=release.reason,
            se_note=release.se_note,
            declared_bounds=dict(declared_bounds),
            hyperparameters={**(hyperparameters or {}), **release.hyperparameters},
            _params=release.params,
            _cov=release.cov,
            _noisy_stats=dict(release.noisy_stats),
            _replicates=release.replicates,
            interval=release.interval,
            plan_note=plan_note,
            bias_source=None if release.failed else release.bias,
            _bias_bound=release.bias_bound,
            at_fit=at_fit,
        )

    @property
    def bias(self) -> pd.Series:
        """A bound on the bias each estimate keeps (``bias_source`` names it), in the estimate's units: 0 where
        the mechanism keeps none, infinite where nothing bounds it. Finite bounds are inside the intervals
        (dpstats/uncertainty/bias.py)."""
        bound = bias_rule.bounds_of(self.bias_source, self._bias_bound, len(self.term_names))
        return pd.Series(bound, index=self.term_names, name="bias")

    @property
    def status(self) -> str:
        """ "failed" (the mechanism failed), "biased" (some estimate's bias bound exceeds its standard error, so
        the bias can dominate its error; ``bias_source`` names it) or "ok" (dpstats/uncertainty/bias.py,
        **Status**)."""
        return bias_rule.status(self.failed, self.bias.to_numpy(), self.bse.to_numpy())

    @property
    def bias_ratio(self) -> float:
        """The largest bias bound in standard errors over the coefficients (0 without a bias; infinite where a
        bias is unbounded or a bounded one has no standard error)."""
        return bias_rule.largest_ratio(self.bias.to_numpy(), self.bse.to_numpy())

    @property
    def survey(self) -> str | None:
        """The survey design the fit is weighted by, in words (``"wt; PSUs: psu within strata st"``), or None
        for an unweighted fit (:func:`survey_design`)."""
        return survey_design(self.hyperparameters)

    @property
    def term_names(self) -> list[str]:
        """Design column names, in order."""
        return list(self.spec.term_names)

    @property
    def params(self) -> pd.Series:
        """Point estimates (NaN when the mechanism failed)."""
        # a copy: with pandas < 3 a Series shares the array, and the result is immutable
        return pd.Series(np.array(self._params, copy=True), index=self.term_names, name="coef")

    def cov_params(self) -> pd.DataFrame:
        """Covariance matrix of the estimates (NaN where no valid DP SE exists)."""
        return pd.DataFrame(np.array(self._cov, copy=True), index=self.term_names, columns=self.term_names)

    @property
    def bse(self) -> pd.Series:
        """Standard errors."""
        return pd.Series(np.sqrt(np.diag(self._cov)), index=self.term_names, name="std err")

    @property
    def tvalues(self) -> pd.Series:
        """Estimate divided by its standard error (a z statistic; NaN where the standard error is not finite)."""
        return pd.Series(z_statistics(self._params, self._cov), index=self.term_names, name="z")

    @property
    def inference(self) -> str:
        """The one law every test and interval of the fit comes from: "bootstrap (basic)",
        "bootstrap (percentile)" or "normal"."""
        return law(self._replicates, self.interval)

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values from the fit's law (``inference``): p < alpha exactly when 0 is outside the
        ``1 - alpha`` interval of ``conf_int``; NaN where the standard error is not finite."""
        p = bias_rule.bias_aware_pvalues(self._params, self._cov, self._replicates, self.interval, self.bias.to_numpy())
        return pd.Series(p, index=self.term_names, name="P>|z|" if self._replicates is None else "P boot")

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Confidence intervals at level ``1 - alpha``, columns ``lower`` and ``upper``.

        Bootstrap intervals (of the kind ``self.interval``: basic or
        percentile, widened to the estimate where they leave it out) where the
        release carries replicates, normal ones from ``cov_params()`` otherwise
        (dpstats/uncertainty/intervals.py), widened by a finite bias bound
        (``bias``; dpstats/uncertainty/bias.py).
        """
        alpha = check_alpha(alpha)
        lower, upper = bias_rule.bias_aware_intervals(
            self._params, self._cov, self._replicates, alpha, self.interval, self.bias.to_numpy()
        )
        return pd.DataFrame({"lower": lower, "upper": upper}, index=self.term_names)

    @property
    def replicates(self) -> pd.DataFrame | None:
        """The bootstrap replicates behind the intervals (post-processing of the release), or None."""
        if self._replicates is None:
            return None
        return pd.DataFrame(np.array(self._replicates, copy=True), columns=self.term_names)

    def f_test(self, hypothesis: Sequence[str] | np.ndarray | tuple[np.ndarray, np.ndarray]) -> FTest:
        """Joint test of linear restrictions: term names (all zero), a matrix R (R theta = 0) or (R, q).

        Post-processing of the release (no budget): a DP Wald/F test in the
        spirit of Alabi & Vadhan (2023), its null law simulated by the
        release's own bootstrap where it has one. ``f_test(["x1", "x2"])`` tests
        x1 = x2 = 0; ``f_test(res.slope_names)`` is the regression's joint
        significance.
        """
        names = self.term_names
        if isinstance(hypothesis, tuple) and len(hypothesis) == 2 and not isinstance(hypothesis[0], str):
            R, q = np.atleast_2d(np.asarray(hypothesis[0], dtype=float)), np.asarray(hypothesis[1], dtype=float)
            label = "R theta = q"
        elif len(hypothesis) and all(isinstance(h, str) for h in hypothesis):
            unknown = [h for h in hypothesis if h not in names]
            if unknown:
                raise ValueError(f"unknown term(s) {unknown}; the terms are {names}")
            R = np.eye(len(names))[[names.index(h) for h in hypothesis]]
            q = np.zeros(R.shape[0])
            label = " = ".join(hypothesis) + " = 0"
        else:
            R = np.atleast_2d(np.asarray(hypothesis, dtype=float))
            q = np.zeros(R.shape[0])
            label = "R theta = 0"
        if R.shape[1] != len(names) or q.shape != (R.shape[0],) or np.linalg.matrix_rank(R) < R.shape[0]:
            raise ValueError(f"R must have full row rank and {len(names)} columns, q one entry per row")
        statistic, df, pvalue, reference = wald_test(self._params, self._cov, self._replicates, R, q)
        return FTest(label, statistic, df, pvalue, reference)

    @property
    def slope_names(self) -> list[str]:
        """The terms other than the intercept."""
        return [t for t in self.term_names if t != "Intercept"]

    @property
    def noisy_stats(self) -> dict[str, np.ndarray]:
        """The released sufficient statistics, in the user's units."""
        return {k: np.array(v, copy=True) for k, v in self._noisy_stats.items()}

    @property
    def formula(self) -> str:
        """The model formula."""
        return self.spec.formula

    @property
    def link(self) -> str | None:
        """A binary-response fit's link ("logit" or "probit"), None for least squares and quantiles."""
        return self.estimator if self.estimator in LINKS else None

    def predict(self, newdata: pd.DataFrame | Mapping, which: str = "mean") -> pd.Series:
        """Predictions at the rows of ``newdata`` (public data; post-processing): the fitted value, which for a
        binary-response fit is the probability ``F(x'theta)`` (``which="mean"``, statsmodels' default) or the
        linear index ``x'theta`` (``which="linear"``)."""
        if which not in ("mean", "linear"):
            raise ValueError("which must be 'mean' or 'linear'")
        X = design_for_new_data(self.spec, newdata)
        index = newdata.index if isinstance(newdata, pd.DataFrame) else None
        fitted = X @ self._params
        if self.link is not None and which == "mean":
            fitted = get_link(self.link).mean(fitted)
        return pd.Series(fitted, index=index, name="predicted")

    def get_margeff(self, at: str = "overall", method: str = "dydx") -> DPMargins:
        """Average marginal effects with delta-method standard errors (dpstats/results/margins.py), as
        statsmodels' ``get_margeff(at="overall", method="dydx")``; post-processing of the fit's release and of
        its averages at the coefficients, released with ``margins_share`` of the call's eps."""
        if self.link is None:
            raise ValueError("marginal effects are for dp_logit and dp_probit fits")
        if (at, method) != ("overall", "dydx"):
            raise ValueError("dpstats releases the average marginal effects: at='overall', method='dydx'")
        if self.at_fit is None:
            raise ValueError("this fit spent nothing on marginal effects (margins_share=0)")
        return DPMargins.of(self.link, self.term_names, self._params, self._cov, self.at_fit)

    # broom names --------------------------------------------------------

    def tidy(self, conf_int: bool = True, conf_level: float = 0.95) -> pd.DataFrame:
        """One row per term: term, estimate, std.error, statistic, p.value, conf.low, conf.high, and the fit's
        ``status`` (biased fits say so on every row a table is built from)."""
        frame = pd.DataFrame(
            {
                "term": self.term_names,
                "estimate": self._params,
                "std.error": self.bse.to_numpy(),
                "statistic": self.tvalues.to_numpy(),
                "p.value": self.pvalues.to_numpy(),
            }
        )
        if conf_int:
            ci = self.conf_int(1 - conf_level)
            frame["conf.low"] = ci["lower"].to_numpy()
            frame["conf.high"] = ci["upper"].to_numpy()
        frame["bias"] = self.bias.to_numpy()  # the bound, inside the interval where finite
        frame["status"] = self.status
        return frame

    def glance(self) -> pd.DataFrame:
        """One row describing the fit and its privacy."""
        return pd.DataFrame(
            [
                {
                    "nobs": self.nobs,
                    # as statsmodels' df_model: the regressors, intercept excluded
                    "df.model": len([t for t in self.term_names if t != "Intercept"]),
                    "method": self.method,
                    "notion": self.privacy.notion,
                    "eps": self.privacy.eps,
                    "delta": self.privacy.delta,
                    "rho": self.privacy.rho,
                    "proven": self.privacy.proven,
                    "neighbours": self.privacy.neighbours,
                    "failed": self.failed,
                    "status": self.status,
                    "bias": self.bias_ratio,
                    "bias.source": self.bias_source,
                    "inference": self.inference,
                    "weights": self.hyperparameters.get("weights"),
                    "cluster": self.hyperparameters.get("cluster"),
                    "strata": self.hyperparameters.get("strata"),
                }
            ]
        )

    # summaries ----------------------------------------------------------

    def summary(self, alpha: float = 0.05) -> Summary:
        """A :class:`~dpstats.output.render.Summary` (text, LaTeX, Markdown, HTML)."""
        return build_summary(self, alpha)

    def to_latex(self) -> str:
        """The summary as a LaTeX table."""
        return self.summary().as_latex()

    def to_markdown(self) -> str:
        """The summary as Markdown."""
        return self.summary().as_markdown()

    def to_html(self) -> str:
        """The summary as HTML."""
        return self.summary().as_html()

    def to_dict(self) -> dict:
        """Plain-Python view of the release (for JSON and for R)."""
        return {
            "formula": self.formula,
            "estimator": self.estimator,
            "method": self.method,
            "method_reason": self.method_reason,
            "nobs": self.nobs,
            "failed": self.failed,
            "reason": self.reason,
            "terms": self.term_names,
            "params": [float(v) for v in self._params],
            "cov": [[float(v) for v in row] for row in self._cov],
            "replicates": None if self._replicates is None else np.asarray(self._replicates, dtype=float).tolist(),
            "interval": self.interval,
            "se_note": self.se_note,
            "plan_note": self.plan_note,
            "bias": [float(v) for v in self.bias],
            "bias_source": self.bias_source,
            "status": self.status,
            "privacy": self.privacy.as_dict(),
            "noisy_stats": {k: np.asarray(v).tolist() for k, v in self._noisy_stats.items()},
            "hyperparameters": dict(self.hyperparameters),
            "bounds": {k: list(v) for k, v in self.declared_bounds.items()},
            "levels": {k: list(v) for k, v in self.spec.levels.items()},
            "margins": None if self.at_fit is None else _margins_dict(self),
        }

    def __str__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()


# --------------------------------------------------------------------------
# The summary's content (its formats are in dpstats/output/render.py)
# --------------------------------------------------------------------------


TITLES = {
    "ols": "DP OLS Regression Results",
    "quantreg": "DP Quantile Regression Results",
    "logit": "DP Logit Regression Results",
    "probit": "DP Probit Regression Results",
}


SURVEY_KEYS = ("weights", "cluster", "strata")
"""The hyperparameters that name a fit's survey design (dpstats/frontend/survey.py)."""


def survey_design(hyperparameters: Mapping[str, object]) -> str | None:
    """A survey design in words, from the names a fit's hyperparameters give it: the weight column, then its
    PSUs (``"wt; PSUs: psu within strata st"``; rows are their own PSUs without ``cluster=``, within strata with
    ``strata=``); None unweighted."""
    weights = hyperparameters.get("weights")
    if weights is None:
        return None
    cluster, strata = hyperparameters.get("cluster"), hyperparameters.get("strata")
    psus = "rows" if cluster is None else f"{cluster}"
    return f"{weights}; PSUs: {psus}" + ("" if strata is None else f" within strata {strata}")


def _margins_dict(res: DPRegressionResults) -> dict:
    """The average marginal effects as plain Python (for JSON and for R)."""
    margins = res.get_margeff()
    return {
        "terms": list(margins.terms),
        "dydx": [float(v) for v in margins.margeff],
        "se": [float(v) for v in margins.margeff_se],
    }


def _fmt(value: float) -> str:
    return "nan" if not np.isfinite(value) else f"{value:.4g}"


def _stat_text(value: np.ndarray) -> str:
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if arr.size > 16:
        return f"{arr.shape[0]}x{arr.shape[1]} matrix (see res.noisy_stats)" if arr.ndim == 2 else "see res.noisy_stats"
    if arr.ndim == 2:
        return "; ".join(", ".join(_fmt(v) for v in row) for row in arr)
    return ", ".join(_fmt(v) for v in arr)


def _law_note(res: DPRegressionResults) -> str:
    """What the p-values, intervals and the joint F test come from (one law per fit)."""
    if res.inference == "normal":
        return "Tests and intervals: normal (z) and chi-square references, from the standard errors."
    return (
        f"Tests and intervals: the bootstrap law of the release's replicates ({res.interval} intervals, each "
        "widened to its estimate where it left it out; P boot inverts them, so P boot < alpha exactly when 0 is "
        "outside the 1 - alpha interval; the joint F test takes the replicates' departures as its null law)."
    )


def _status_text(res: DPRegressionResults) -> str:
    """The status line of a fit that did not fail: "ok" or "biased", with the bias bound in standard errors and
    where the intervals hold it (dpstats/uncertainty/bias.py, **Status**)."""
    if res.bias_source is None:
        return "ok"
    ratio = res.bias_ratio
    if not np.isfinite(ratio) and np.isinf(res.bias.to_numpy()).any():
        return f"biased: the interval does not cover {res.bias_source}"
    carried = "the intervals carry the bound" if np.isfinite(ratio) else "no interval carries it"
    size = f"up to {ratio:.2g} standard errors" if np.isfinite(ratio) else "of unknown size next to the noise"
    word = res.status
    return f"{word}: bias {size} ({carried}; column bias <=): {res.bias_source}"


def _missing_se_note(res: DPRegressionResults, terms: list[str]) -> str:
    """Why z and p are NaN for ``terms``: the release's standard-error part failed (infinite) or there is none."""
    failed = any(np.isinf(se) for se in res.bse[terms])
    why = (
        "the part of the release the standard errors need failed, so the intervals are infinite"
        if failed
        else "the mechanism released no standard error (see the note on standard errors)"
    )
    return f"No test for {', '.join(terms)}: z and p are NaN because {why}."


def build_summary(res: DPRegressionResults, alpha: float = 0.05) -> Summary:
    """Assemble the summary of ``res`` (post-processing only)."""
    status = "FAILED: " + (res.reason or "") if res.failed else _status_text(res)
    if res.plan_note:
        status += f" (fitted although the plan advised against it: {res.plan_note})"
    method = res.method_title + (f" [auto: {res.method_reason}]" if res.method_reason else "")
    model = [
        ("Dep. variable", res.y_name),
        ("Formula", res.formula),
        ("Method", method),
        ("Reference", res.citation),
        ("No. observations", f"{res.nobs} (public)"),
        *([("Weights", res.survey)] if res.survey else []),
        ("Parameters", str(len(res.term_names))),
        ("Status", status),
    ]
    if res.slope_names and not res.failed and np.all(np.isfinite(res.bse)):
        joint = res.f_test(res.slope_names)
        model.append(("Joint F (slopes = 0)", f"{joint.statistic:.4g} on {joint.df} df, p = {joint.pvalue:.4g}"))
    spent = res.privacy
    privacy = [
        ("Privacy", spent.describe()),
        ("Guarantee", spent.guarantee()),
        ("Neighbours", spent.neighbours),
        ("Budget split", ", ".join(f"{name}: {part:.4g}" for name, part in spent.split)),
        (
            "Declared bounds",
            ", ".join(f"{k} in [{lo:g}, {hi:g}]" for k, (lo, hi) in res.declared_bounds.items()) or "none",
        ),
    ]
    if res.spec.levels:
        privacy.append(("Declared levels", "; ".join(f"{k}: {list(v)}" for k, v in res.spec.levels.items())))
    privacy += [("Caveat", c) for c in spent.caveats]
    tuning = {k: v for k, v in res.hyperparameters.items() if k not in SURVEY_KEYS}  # the design has its own line
    if tuning:
        privacy.append(("Hyperparameters", ", ".join(f"{k}={v}" for k, v in tuning.items())))

    ci = res.conf_int(alpha)
    low, high = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
    coefficients = pd.DataFrame(
        {
            "coef": res.params.to_numpy(),
            "std err": res.bse.to_numpy(),
            "z": res.tvalues.to_numpy(),
            str(res.pvalues.name): res.pvalues.to_numpy(),
            low: ci["lower"].to_numpy(),
            high: ci["upper"].to_numpy(),
        },
        index=res.term_names,
    )
    if res.bias_source is not None and not res.failed:
        coefficients["bias <="] = res.bias.to_numpy()
    stats = tuple((name, _stat_text(value)) for name, value in res.noisy_stats.items())
    notes = [res.se_note, _law_note(res)]
    missing = [t for t, se in zip(res.term_names, res.bse, strict=True) if not np.isfinite(se)]
    if missing and not res.failed:
        notes.append(_missing_se_note(res, missing))
    if res.declared_bounds:
        notes.append("Data were clipped to the declared bounds; estimates are in the data's units.")
    if res.failed:
        notes.insert(0, "The mechanism failed; the privacy budget was still spent. " + (res.reason or ""))
    return Summary(
        title=TITLES.get(res.estimator, "DP Regression Results"),
        model=tuple(model),
        privacy=tuple(privacy),
        coefficients=coefficients,
        noisy_stats=stats,
        notes=tuple(notes),
    )
