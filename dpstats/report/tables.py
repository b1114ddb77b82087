"""``dpstats.table``: several fits side by side, as a paper's regression table.

A column per model (a :class:`~dpstats.results.regression.DPRegressionResults`, or one per
quantile of a :class:`~dpstats.results.quantile_fits.DPQuantileFits`), a row per term
with the estimate over its standard error in parentheses (or its interval in
brackets: ``res.conf_int()``, a bootstrap interval where the release carries
replicates), optional significance stars from ``res.pvalues``, categorical
blocks collapsed into rows such as "Firm FE: yes", and the public facts of each
fit: N, the privacy spent (eps, and delta and rho where a fit has them), the
estimator and the mechanism, and a weighted fit's survey design (rows
"Weights" and "PSUs", shown when a fit has them). Everything here is post-processing of released
values (docs/DESIGN.md, section 4); the formats are drawn by
:class:`dpstats.output.render.ModelTable`.

New kinds of result join the table by registering :func:`model_columns` for
their class (grouped fits: one column per group, or per fit within a group).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..output.render import ModelTable, TableRow
from ..results.quantile_fits import DPQuantileFits
from ..results.regression import SURVEY_KEYS, DPRegressionResults
from ..uncertainty import bias as bias_rule
from ..uncertainty.intervals import check_alpha

STARS = (0.1, 0.05, 0.01)
"""The conventional thresholds of ``stars=True``: one star below 0.1, two below 0.05, three below 0.01."""


@dataclass(frozen=True)
class Column:
    """One model column: released values and public facts, at the table's interval level."""

    y_name: str
    estimator: str
    method: str
    nobs: int
    notion: str
    eps: float
    delta: float
    rho: float | None
    proven: bool
    failed: bool
    reason: str | None
    bias_source: str | None
    bias: np.ndarray
    """Per term, the bound on the bias the estimate keeps (0: none; inside the interval where finite)."""
    terms: tuple[str, ...]
    estimate: np.ndarray
    se: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    pvalue: np.ndarray
    neighbours: str | None = None
    """The neighbour relation of a fit whose privacy unit is not one row (None: one row)."""
    weights: str | None = None
    """The survey-weight column of a weighted fit (None: unweighted)."""
    psus: str | None = None
    """A weighted fit's declared PSUs, ``"psu"`` or ``"psu within st"`` (None: none declared)."""

    @property
    def status(self) -> str:
        """ "failed", "biased" or "ok" (dpstats/uncertainty/bias.py, **Status**)."""
        return bias_rule.status(self.failed, self.bias, self.se)

    @property
    def bias_ratio(self) -> float:
        """The largest bias bound in standard errors (infinite where a bound has no finite one to compare)."""
        return bias_rule.largest_ratio(self.bias, self.se)


@dataclass(frozen=True)
class ReleasedFit:
    """A fit's released values as plain data (``res.to_dict()``, or a fit sent from R), for tables and plots.

    ``replicates`` and ``interval`` are the release's bootstrap draws and their
    kind (dpstats/uncertainty/intervals.py), so intervals are the ones ``conf_int()`` gives.
    """

    y_name: str
    estimator: str
    method: str
    nobs: int
    privacy: Mapping[str, Any]
    terms: tuple[str, ...]
    params: np.ndarray
    cov: np.ndarray
    replicates: np.ndarray | None = None
    interval: str = "basic"
    q: float | None = None
    failed: bool = False
    reason: str | None = None
    bias_source: str | None = None
    bias: np.ndarray | None = None
    """Per term, the bound on the bias (``res.bias``); None with ``bias_source``: unbounded."""
    survey: Mapping[str, str] | None = None
    """The survey design's column names (``weights``, ``cluster``, ``strata``; None unweighted)."""

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ReleasedFit:
        """From ``res.to_dict()`` (or R's fit): terms, params, cov, replicates, interval, nobs, privacy, ...."""
        terms = tuple(str(t) for t in payload["terms"])
        k = len(terms)
        params = np.asarray(payload["params"], dtype=float).reshape(k)
        cov = np.asarray(payload["cov"], dtype=float).reshape(k, k)
        raw = payload.get("replicates")
        replicates = None if raw is None or len(raw) == 0 else np.asarray(raw, dtype=float).reshape(-1, k)
        y_name = payload.get("y_name") or str(payload.get("formula", "")).split("~")[0].strip()
        hyperparameters = payload.get("hyperparameters") or {}
        q = payload.get("q", hyperparameters.get("q"))
        survey = {k: str(hyperparameters[k]) for k in SURVEY_KEYS if hyperparameters.get(k) is not None}
        bound = payload.get("bias")
        return cls(
            y_name=y_name,
            estimator=str(payload.get("estimator", "ols")),
            method=str(payload.get("method", "")),
            nobs=int(payload["nobs"]),
            privacy=dict(payload["privacy"]),
            terms=terms,
            params=params,
            cov=cov,
            replicates=replicates,
            interval=str(payload.get("interval") or "basic"),
            q=None if q is None else float(q),
            failed=bool(payload.get("failed", False)),
            reason=payload.get("reason"),
            bias_source=payload.get("bias_source") or None,
            bias=None if bound is None else np.asarray(bound, dtype=float).reshape(k),
            survey=survey or None,
        )


def _weights_name(survey: Mapping[str, object]) -> str | None:
    """The survey-weight column of a fit's design (None: unweighted)."""
    weights = survey.get("weights")
    return None if weights is None else str(weights)


def _psus(survey: Mapping[str, object]) -> str | None:
    """The declared PSUs of a survey design, for a table's cell (None: none declared)."""
    cluster, strata = survey.get("cluster"), survey.get("strata")
    if cluster is None:
        return None if strata is None else f"rows within {strata}"
    return f"{cluster}" if strata is None else f"{cluster} within {strata}"


def _estimator(estimator: str, q: float | None) -> str:
    if estimator == "ols":
        return "OLS"
    if estimator == "quantreg":
        return "Quantile" if q is None else f"Quantile (q = {q:g})"
    return {"logit": "Logit", "probit": "Probit"}.get(estimator, estimator)


@functools.singledispatch
def model_columns(model: Any, alpha: float) -> list[Column]:
    """The table columns of ``model`` (one per fit), intervals at level ``1 - alpha``; register new result kinds."""
    raise TypeError(
        f"dpstats.table takes DPRegressionResults, DPQuantileFits and ReleasedFit, not {type(model).__name__}"
    )


@model_columns.register
def _(model: DPRegressionResults, alpha: float) -> list[Column]:
    ci = model.conf_int(alpha)
    spent = model.privacy
    return [
        Column(
            y_name=model.y_name,
            estimator=_estimator(model.estimator, model.hyperparameters.get("q")),
            method=model.method,
            nobs=model.nobs,
            notion=spent.notion,
            eps=spent.eps,
            delta=spent.delta,
            rho=spent.rho,
            proven=spent.proven,
            failed=model.failed,
            reason=model.reason,
            bias_source=model.bias_source,
            bias=model.bias.to_numpy(),
            terms=tuple(model.term_names),
            estimate=model.params.to_numpy(),
            se=model.bse.to_numpy(),
            lower=ci["lower"].to_numpy(),
            upper=ci["upper"].to_numpy(),
            pvalue=model.pvalues.to_numpy(),
            neighbours=None if spent.unit == "row" else spent.neighbours,
            weights=_weights_name(model.hyperparameters),
            psus=_psus(model.hyperparameters),
        )
    ]


@model_columns.register
def _(model: DPQuantileFits, alpha: float) -> list[Column]:
    return [column for fit in model.fits for column in model_columns(fit, alpha)]


@model_columns.register
def _(model: ReleasedFit, alpha: float) -> list[Column]:
    bound = bias_rule.bounds_of(model.bias_source, model.bias, len(model.terms))
    lower, upper = bias_rule.bias_aware_intervals(
        model.params, model.cov, model.replicates, alpha, model.interval, bound
    )
    privacy = model.privacy
    rho = privacy.get("rho")
    return [
        Column(
            y_name=model.y_name,
            estimator=_estimator(model.estimator, model.q),
            method=model.method,
            nobs=model.nobs,
            notion=str(privacy.get("notion", "pure")),
            eps=float(privacy["eps"]),
            delta=float(privacy.get("delta") or 0.0),
            rho=None if rho is None or (isinstance(rho, float) and math.isnan(rho)) else float(rho),
            proven=privacy.get("proven", True) is not False,
            failed=model.failed,
            reason=model.reason,
            bias_source=model.bias_source,
            bias=bound,
            terms=model.terms,
            estimate=model.params,
            se=np.sqrt(np.diag(model.cov)),
            lower=np.asarray(lower, dtype=float),
            upper=np.asarray(upper, dtype=float),
            pvalue=bias_rule.bias_aware_pvalues(model.params, model.cov, model.replicates, model.interval, bound),
            neighbours=None if privacy.get("unit", "row") == "row" else str(privacy.get("neighbours")),
            weights=_weights_name(model.survey or {}),
            psus=_psus(model.survey or {}),
        )
    ]


def _as_list(models: Any) -> tuple[list[Any], list[str] | None]:
    """The models in order, and the labels of a mapping {label: model}."""
    if isinstance(models, Mapping):
        return list(models.values()), [str(k) for k in models]
    if isinstance(models, list | tuple):
        return list(models), None
    return [models], None


def collect(
    models: Any, labels: Sequence[str] | None, alpha: float
) -> tuple[list[Any], list[Column], list[str] | None]:
    """The models as a list, their columns, and each column's label (None when no label was given).

    ``models`` is a fit, a list of fits or a dict {label: fit}; ``labels``, if given, overrides the dict's keys.
    """
    items, keys = _as_list(models)
    if not items:
        raise ValueError("models is empty")
    given = [str(label) for label in labels] if labels is not None else keys
    if given is not None and len(given) != len(items):
        raise ValueError(f"labels has {len(given)} entries for {len(items)} models")
    columns, names = [], []
    for i, model in enumerate(items):
        found = model_columns(model, alpha)
        columns += found
        names += [given[i] if given is not None else ""] * len(found)
    return items, columns, names if given is not None else None


def _number(value: float, digits: int) -> str:
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def _star_count(p: float, thresholds: Sequence[float]) -> int:
    return sum(1 for t in thresholds if math.isfinite(p) and p < t)


def _thresholds(stars: bool | Sequence[float]) -> tuple[float, ...]:
    if stars is True:
        return STARS
    if stars is False or stars is None:
        return ()
    out = tuple(sorted((float(t) for t in stars), reverse=True))
    if not out or any(not 0 < t < 1 for t in out):
        raise ValueError("stars must be True, False or p-value thresholds in (0, 1), such as (0.1, 0.05, 0.01)")
    return out


def _in_block(term: str, block: str | Sequence[str]) -> bool:
    """A collapsed block is a prefix of its terms' names (``"C(firm)"``, ``"religious["``) or a list of names."""
    return term.startswith(block) if isinstance(block, str) else term in block


def select_terms(
    columns: list[Column],
    order: Sequence[str],
    drop: Sequence[str],
    collapse: Mapping[str, str | Sequence[str]],
    rename: Mapping[str, str],
) -> list[str]:
    """The terms shown: every column's, first seen first, without the dropped and collapsed; ``order`` first."""
    seen = list(dict.fromkeys(t for c in columns for t in c.terms))
    unknown = [t for t in [*order, *drop] if t not in seen and t not in rename.values()]
    if unknown:
        raise ValueError(f"unknown term(s) {unknown}; the models' terms are {seen}")
    label = {t: rename.get(t, t) for t in seen}
    shown = [
        t
        for t in seen
        if t not in drop and label[t] not in drop and not any(_in_block(t, b) for b in collapse.values())
    ]
    rank = {name: i for i, name in enumerate(order)}
    first = sorted((t for t in shown if t in rank or label[t] in rank), key=lambda t: rank.get(t, rank.get(label[t])))
    return first + [t for t in shown if t not in first]


def _coefficient_row(
    term: str, label: str, columns: list[Column], below: str | None, digits: int, thresholds: tuple[float, ...]
) -> TableRow:
    cells, stars, under = [], [], []
    for column in columns:
        if term not in column.terms:
            cells.append("")
            stars.append(0)
            under.append("")
            continue
        i = column.terms.index(term)
        cells.append(_number(column.estimate[i], digits))
        stars.append(_star_count(column.pvalue[i], thresholds))
        if below == "se":
            under.append(f"({_number(column.se[i], digits)})")
        elif below == "ci":
            under.append(f"[{_number(column.lower[i], digits)}, {_number(column.upper[i], digits)}]")
    return TableRow(label, tuple(cells), tuple(stars), tuple(under) if below else ())


def _statistics(columns: list[Column]) -> list[TableRow]:
    rows = [
        TableRow("Estimator", tuple(c.estimator for c in columns)),
        TableRow("Method", tuple(c.method for c in columns)),
        TableRow("N (public)", tuple(f"{c.nobs:,}" for c in columns)),
        TableRow("eps", tuple(f"{c.eps:g}" for c in columns)),
    ]
    if any(c.delta > 0 for c in columns):
        rows.append(TableRow("delta", tuple(f"{c.delta:g}" for c in columns)))
    if any(c.rho is not None for c in columns):
        rows.append(TableRow("rho", tuple("-" if c.rho is None else f"{c.rho:g}" for c in columns)))
    if any(c.weights is not None for c in columns):
        rows.append(TableRow("Weights", tuple(c.weights or "none" for c in columns)))
    if any(c.psus is not None for c in columns):
        rows.append(TableRow("PSUs", tuple(c.psus or ("rows" if c.weights else "-") for c in columns)))
    if not all(c.proven for c in columns):
        rows.append(TableRow("Guarantee", tuple("proven" if c.proven else "not proven" for c in columns)))
    return rows


def _notes(
    columns: list[Column],
    labels: list[str],
    below: str | None,
    alpha: float,
    thresholds: tuple[float, ...],
    shared: bool,
) -> list[str]:
    notes = []
    if below == "se":
        notes.append("Standard errors in parentheses; they cover sampling error and privacy noise.")
    elif below == "ci":
        notes.append(
            f"{1 - alpha:.0%} confidence intervals in brackets (bootstrap where the fit carries replicates, "
            "normal otherwise); they cover sampling error and privacy noise."
        )
    if thresholds:
        marks = ", ".join(f"{'*' * (i + 1)} p < {t:g}" for i, t in enumerate(thresholds))
        notes.append(f"{marks} (two-sided tests from each fit's law: its bootstrap where it carries one, else normal).")
    privacy = "N is public; eps is the privacy each fit spent"
    if any(c.delta > 0 or c.rho is not None for c in columns):
        privacy += " (with its delta, or rho for zCDP)"
    notes.append(privacy + (": quantiles fitted in one call share that call's eps." if shared else "."))
    units: dict[str, list[str]] = {}
    for label, column in zip(labels, columns, strict=True):
        if column.neighbours is not None:
            units.setdefault(column.neighbours, []).append(label)
    notes += [f"{', '.join(group)}: neighbours: {relation}." for relation, group in units.items()]
    weighted = [label for label, column in zip(labels, columns, strict=True) if column.weights is not None]
    if weighted:
        notes.append(
            f"{', '.join(weighted)}: weighted by the survey weights; design-based standard errors (linearisation "
            "over the PSUs, as survey::svyglm; rows are their own PSUs where none are declared)."
        )
    biased: dict[str, list[str]] = {}  # columns with the same note share one
    for label, column in zip(labels, columns, strict=True):
        if column.failed:
            notes.append(f"{label}: the mechanism failed ({column.reason}); its privacy budget was still spent.")
        elif column.bias_source is not None:
            biased.setdefault(bias_note(column), []).append(label)
    notes += [f"{', '.join(group)}: {note}" for note, group in biased.items()]
    return notes


def bias_note(column: Column) -> str:
    """A column's bias in words: its status, how large its bound is against the standard errors and whether the
    intervals carry it (dpstats/uncertainty/bias.py)."""
    if np.isinf(column.bias).any():
        return f"{column.status}: the interval does not cover {column.bias_source}."
    ratio = column.bias_ratio
    size = f"up to {ratio:.2g} standard errors" if np.isfinite(ratio) else "of unknown size next to the noise"
    return f"{column.status}: the intervals carry a bias bound {size} ({column.bias_source})."


def table(
    models: Any,
    *,
    labels: Sequence[str] | None = None,
    rename: Mapping[str, str] | None = None,
    order: Sequence[str] = (),
    drop: Sequence[str] = (),
    collapse: Mapping[str, str | Sequence[str]] | None = None,
    below: str | None = "se",
    alpha: float = 0.05,
    stars: bool | Sequence[float] = False,
    digits: int = 3,
    title: str = "",
    notes: Sequence[str] | str = (),
) -> ModelTable:
    """Several fits side by side, with their privacy (see the module docstring).

    Parameters
    ----------
    models : a fit, a list of fits, or a dict {label: fit}; a DPQuantileFits gives one column per quantile.
    labels : the column labels (default: the dict's keys, if any); the columns are numbered (1), (2), ... too.
    rename : {term: label}, e.g. ``{"yrs_married": "Years married"}``.
    order : terms (or their labels) to show first, in this order; the others follow as first seen.
    drop : terms (or their labels) not to show, e.g. ``["Intercept"]``.
    collapse : {row label: block}: a block's terms are not shown, a row says "yes" for the models that have
        any of them and "no" for the others. A block is the prefix of its terms' names (``"C(firm)"``,
        ``"religious["`` for a variable whose levels are declared, ``"factor(firm)"`` from R) or a list of names.
    below : ``"se"`` (standard errors in parentheses), ``"ci"`` (intervals ``res.conf_int(alpha)`` in
        brackets) or None.
    alpha : the intervals' level is ``1 - alpha``.
    stars : False, True (``* p < 0.1, ** p < 0.05, *** p < 0.01``, from ``res.pvalues``) or thresholds.
    digits : decimals of the estimates and their standard errors.
    title, notes : a title, and notes added after the table's own (which say what the standard errors cover).

    Returns
    -------
    A :class:`~dpstats.output.render.ModelTable`: ``as_latex()`` (booktabs), ``as_markdown()``, ``as_html()``,
    ``as_text()``, ``to_frame()``.
    """
    alpha = check_alpha(alpha)
    if below not in ("se", "ci", None):
        raise ValueError("below must be 'se', 'ci' or None")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 0 <= digits <= 10:
        raise ValueError("digits must be an integer in [0, 10]")
    items, columns, names = collect(models, labels, alpha)
    rename = dict(rename or {})
    collapse = dict(collapse or {})
    thresholds = _thresholds(stars)
    numbers = tuple(f"({i})" for i in range(1, len(columns) + 1))
    header = [tuple(c.y_name for c in columns)]
    if names is not None:
        header.append(tuple(names))
    header.append(numbers)
    coefficients = [
        _coefficient_row(term, rename.get(term, term), columns, below, digits, thresholds)
        for term in select_terms(columns, list(order), list(drop), collapse, rename)
    ]
    blocks = [
        TableRow(label, tuple("yes" if any(_in_block(t, block) for t in c.terms) else "no" for c in columns))
        for label, block in collapse.items()
    ]
    shared = any(isinstance(m, DPQuantileFits) and len(m) > 1 for m in items)
    extra = [notes] if isinstance(notes, str) else list(notes)
    return ModelTable(
        title=title,
        header=tuple(header),
        panels=tuple(tuple(panel) for panel in (coefficients, blocks, _statistics(columns)) if panel),
        notes=tuple(_notes(columns, list(numbers), below, alpha, thresholds, shared) + extra),
        below=below or "se",
    )
