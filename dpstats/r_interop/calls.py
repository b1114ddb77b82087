"""What the R package calls through reticulate: fits, budgets and tables, answered in builtins only.

:func:`fit_from_r` runs ``dp_ols``, ``dp_quantreg`` (one quantile, several, or
one fit per group), ``dp_logit`` or ``dp_probit`` on the frame rebuilt from R's column records
(dpstats/r_interop/columns.py) and returns builtins only (dict, list, str, float,
int, bool, None), which reach R as named lists and vectors. Errors come back as
``{"ok": False, ...}`` so the R side can raise them as ordinary R errors. A
privacy budget crosses as the JSON text of its file (:func:`budget_payload`): R
keeps it, sends it with a fit (after :func:`check_budget_first`, before any
column) and gets it back spent. :func:`table_from_r` lays out fits held in R with
``dpstats.table``'s layout; :func:`compare_from_r` is ``dpstats.compare_methods``,
the plan before any budget is spent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..output.render import plain
from .columns import as_float, as_list, frame_from_columns


def result_payload(res: Any) -> dict:
    """Everything R needs from a fit, as builtins (post-processing only).

    Several quantiles (a :class:`~dpstats.results.quantile_fits.DPQuantileFits`) give
    ``quantiles``, the whole call's ``privacy`` and ``fits``: one payload per quantile.
    """
    import dpstats
    from dpstats.groups.grouped_results import DPGroupedResults
    from dpstats.results.quantile_fits import DPQuantileFits

    if isinstance(res, DPGroupedResults):
        tidy = res.tidy()
        return plain(
            {
                "grouped": True,
                "by": res.by,
                "keys": list(res.keys),
                "nobs": list(res.sizes),
                "failed": [bool(v) for v in res.failed],
                "tidy": {name: tidy[name].tolist() for name in tidy.columns if name != res.by},
                "method": res.methods.tolist(),
                "privacy": res.privacy.as_dict(),
                "summary_text": res.summary().as_text(),
                "dpstats_version": dpstats.__version__,
            }
        )
    if isinstance(res, DPQuantileFits):
        return plain(
            {
                "quantiles": list(res.quantiles),
                "privacy": res.privacy.as_dict(),
                "fits": [result_payload(fit) for fit in res.fits],
                "summary_text": res.as_text(),
                "dpstats_version": dpstats.__version__,
            }
        )
    payload = dict(res.to_dict())
    for attr in ("method_title", "citation", "y_name"):
        payload[attr] = getattr(res, attr, None)
    payload["summary_text"] = res.summary().as_text()
    payload["dpstats_version"] = dpstats.__version__
    return plain(payload)


def _integral(value: Any) -> Any:
    """An integral double from R (R's numbers are doubles) as a Python int; anything else unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _named(x: Any) -> dict | None:
    """An R named list (a dict) or NULL/empty list (None)."""
    if x is None or (isinstance(x, (list, tuple)) and len(x) == 0):
        return None
    if not isinstance(x, Mapping):
        raise TypeError("expected a named list")
    return dict(x)


class _LedgerFormula:
    """A budget whose ledger shows the formula as the R user wrote it (R's ``factor(cyl)``, not ``C(cyl)``)."""

    def __init__(self, budget: Any, formula: str) -> None:
        self.budget, self.formula = budget, formula

    def check(self, planned: Any) -> None:
        self.budget.check(planned)

    def record(self, spent: Any, **labels: Any) -> None:
        self.budget.record(spent, **{**labels, "formula": self.formula})


def budget_payload(budget: Any) -> dict:
    """A budget for R: its ``state`` (the JSON text of its file, which R keeps and sends back) and a
    ``view`` of builtins for printing without Python (caps, rule, spent, remaining, ledger columns)."""
    ledger = budget.ledger
    columns = {name: ledger[name].tolist() for name in ledger.columns if name != "time"}
    columns["time"] = [t.isoformat() for t in ledger["time"]]
    view = {
        "accounting": budget.accounting,
        "eps": budget.eps,
        "delta": budget.delta,
        "rho": budget.rho,
        "spent": budget.spent,
        "remaining": budget.remaining,
        "description": budget.describe(),
        "ledger": columns,
    }
    return {"state": budget.to_json(), "view": plain(_finite_or_none(view))}


def _finite_or_none(obj: Any) -> Any:
    """NaN (pandas' missing rho) as None, which reaches R as NULL / NA."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    return obj


def _error(exc: Exception) -> dict:
    from ..privacy.budget import BudgetExceeded

    return {"ok": False, "error": type(exc).__name__, "message": str(exc), "refused": isinstance(exc, BudgetExceeded)}


def new_budget(eps: Any = None, delta: Any = 0.0, rho: Any = None, accounting: Any = None) -> dict:
    """``dp_budget()`` from R: ``{"ok": True, "budget": budget_payload}`` or an error record."""
    from ..privacy.budget import PrivacyBudget

    try:
        return {"ok": True, "budget": budget_payload(PrivacyBudget(eps, delta, rho, accounting=accounting))}
    except Exception as exc:  # reported to R as an R error
        return _error(exc)


def check_budget_first(
    budget: str, estimator: str, eps: Any, delta: Any = 0.0, method: str = "auto", options: Any = None
) -> dict:
    """Whether the budget (its JSON state) can take a fit with these public inputs: ``{"ok": True}`` or
    an error record. The R side asks before it sends any column to Python."""
    from ..api.estimators import planned_spend
    from ..privacy.budget import PrivacyBudget

    try:
        opts = dict(_named(options) or {})
        opts.pop("margins_share", None)  # a part of eps: the spend is eps whatever it is
        account = PrivacyBudget.from_json(budget)
        account.check(planned_spend(estimator, eps=eps, delta=delta, rho=opts.pop("rho", None), method=method, **opts))
        return {"ok": True}
    except Exception as exc:  # reported to R as an R error
        return _error(exc)


def budget_from_json(text: str) -> dict:
    """``dp_budget_load()`` from R: the budget of a saved file's text, validated, or an error record."""
    from ..privacy.budget import PrivacyBudget

    try:
        return {"ok": True, "budget": budget_payload(PrivacyBudget.from_json(text))}
    except Exception as exc:  # reported to R as an R error
        return _error(exc)


def _declared(named: Any) -> dict | None:
    """R's bounds or levels (a named list of vectors) as dp_ols takes them; None when there are none."""
    return {k: as_list(v) for k, v in (_named(named) or {}).items()} or None


def _fit(
    estimator: str,
    formula: str,
    columns: Mapping[str, Mapping[str, Any]],
    eps: Any,
    bounds: Any,
    levels: Any,
    method: str,
    delta: Any,
    random_state: Any,
    missing: str,
    options: Any,
    tau: Any,
    nrow: int | None,
    budget: Any = None,
) -> Any:
    import dpstats

    frame = frame_from_columns(columns, nrow)
    bounds, levels = _declared(bounds), _declared(levels)
    kwargs: dict[str, Any] = {
        "eps": eps,
        "bounds": bounds,
        "levels": levels,
        "method": method,
        "delta": delta,
        "random_state": _integral(random_state),
        "budget": budget,
    }
    kwargs.update(_named(options) or {})
    _grouped_options(kwargs)
    if estimator == "ols":
        return dpstats.dp_ols(formula, frame, missing=missing, **kwargs)
    if estimator in ("logit", "probit"):
        fit = dpstats.dp_logit if estimator == "logit" else dpstats.dp_probit
        return fit(formula, frame, missing=missing, **kwargs)
    if estimator != "quantreg":
        raise ValueError(f"unknown estimator {estimator!r}")
    quantiles = as_list(tau)
    q = quantiles[0] if len(quantiles) == 1 else quantiles
    return dpstats.dp_quantreg(formula, frame, q=q, missing=missing, **kwargs)


def _grouped_options(kwargs: dict[str, Any]) -> None:
    """R's ``groups`` (a vector) and ``group_sizes`` (sizes in the order of ``groups``) as dp_ols takes them."""
    if kwargs.get("groups") is None:
        return
    keys = [_integral(k) for k in as_list(kwargs["groups"])]
    kwargs["groups"] = keys
    kwargs["n_jobs"] = int(kwargs.get("n_jobs") or 1)  # no process pool from inside R unless asked
    sizes = kwargs.get("group_sizes")
    if sizes is not None:
        sizes = [_integral(v) for v in as_list(sizes)]
        if len(sizes) != len(keys):
            raise ValueError("group_sizes must give one size per key of groups, in the same order")
        kwargs["group_sizes"] = dict(zip(keys, sizes, strict=True))


def fit_from_r(
    estimator: str,
    formula: str,
    columns: Mapping[str, Mapping[str, Any]],
    eps: Any,
    bounds: Any = None,
    levels: Any = None,
    method: str = "auto",
    delta: Any = 0.0,
    random_state: Any = None,
    missing: str = "impute",
    options: Any = None,
    tau: Any = None,
    nrow: int | None = None,
    budget: str | None = None,
    ledger_formula: str | None = None,
) -> dict:
    """Fit ``estimator`` ('ols', 'quantreg', 'logit' or 'probit') on columns sent from R.

    ``formula`` is already a patsy formula and the column names are valid
    Python identifiers (the R side translates both). Returns
    ``{"ok": True, "result": {...}}`` or ``{"ok": False, "error": type, "message": str}``;
    every value is a builtin. ``budget`` is the JSON state of the R side's
    budget (:func:`budget_payload`): the fit is charged to it (its ledger shows
    ``ledger_formula``, the R formula), and once the fit has released the
    answer carries the new ``budget``, even if the result could not be
    converted, so that R never loses a spend.
    """
    from ..privacy.budget import PrivacyBudget

    try:
        account = None if budget is None else PrivacyBudget.from_json(budget)
        charged = None if account is None else _LedgerFormula(account, ledger_formula or formula)
        res = _fit(
            estimator,
            formula,
            columns,
            eps,
            bounds,
            levels,
            method,
            delta,
            random_state,
            missing,
            options,
            tau,
            nrow,
            charged,
        )
    except Exception as exc:  # reported to R as an R error, never swallowed
        return _error(exc)
    spent = {} if account is None else {"budget": budget_payload(account)}
    try:
        return {"ok": True, "result": result_payload(res), **spent}
    except Exception as exc:  # the release happened: the budget still goes back to R
        return {**_error(exc), **spent}


# --------------------------------------------------------------------------
# Tables of fits held in R (the layout is dpstats.table's: one source of truth)
# --------------------------------------------------------------------------

TABLE_FORMATS = ("latex", "markdown", "html", "text")


def _fit_record(fit: Mapping[str, Any]) -> dict:
    """An R fit's public values as ``ReleasedFit.from_dict`` reads them (R vectors may arrive as scalars)."""
    terms = [str(t) for t in as_list(fit.get("terms"))]
    replicates = fit.get("replicates")
    return {
        **dict(fit),
        "terms": terms,
        "params": [as_float(v) for v in as_list(fit.get("params"))],
        "cov": [[as_float(v) for v in as_list(row)] for row in as_list(fit.get("cov"))],
        "replicates": None if not replicates else [[as_float(v) for v in as_list(r)] for r in as_list(replicates)],
        "privacy": dict(_named(fit.get("privacy")) or {}),
    }


def _table_options(options: Mapping[str, Any]) -> dict:
    """dpstats.table's keyword arguments from R's (vectors of length 1 arrive as scalars)."""
    out: dict[str, Any] = {}
    for key in ("labels", "order", "drop", "notes"):
        if options.get(key) is not None:
            out[key] = [str(v) for v in as_list(options[key])]
    for key in ("rename", "collapse"):
        if options.get(key) is not None:
            out[key] = {
                str(k): v if isinstance(v, str) else [str(t) for t in as_list(v)]
                for k, v in _named(options[key]).items()
            }
    if options.get("below") is not None:
        out["below"] = None if options["below"] == "none" else str(options["below"])
    if options.get("alpha") is not None:
        out["alpha"] = float(options["alpha"])
    stars = options.get("stars")
    if stars is not None:
        out["stars"] = stars if isinstance(stars, bool) else [float(v) for v in as_list(stars)]
    if options.get("digits") is not None:
        out["digits"] = int(options["digits"])
    if options.get("title") is not None:
        out["title"] = str(options["title"])
    return out


def table_from_r(fits: Any, fmt: str = "latex", options: Any = None) -> dict:
    """``dpstats.table`` of fits sent from R as plain values, in one of :data:`TABLE_FORMATS`.

    Each fit is a named list (terms, params, cov, replicates, interval, nobs,
    privacy, method, estimator, q, y_name, failed, reason) built from the R
    fit, which holds released values only. Returns ``{"ok": True, "text": str}``
    or ``{"ok": False, "error": type, "message": str}``.
    """
    try:
        from ..report.tables import ReleasedFit, table

        if fmt not in TABLE_FORMATS:
            raise ValueError(f"format must be one of {list(TABLE_FORMATS)}")
        released = [ReleasedFit.from_dict(_fit_record(fit)) for fit in as_list(fits)]
        out = table(released, **_table_options(_named(options) or {}))
        text = {"latex": out.as_latex, "markdown": out.as_markdown, "html": out.as_html, "text": out.as_text}[fmt]()
        return {"ok": True, "text": text}
    except Exception as exc:  # reported to R as an R error, never swallowed
        return {"ok": False, "error": type(exc).__name__, "message": str(exc)}


def compare_from_r(
    formula: str,
    n: Any,
    eps: Any,
    bounds: Any = None,
    levels: Any = None,
    estimator: str = "ols",
    delta: Any = 0.0,
    target: Any = None,
    se_share: Any = None,
    max_rows: Any = 1,
    units: Any = None,
) -> dict:
    """``dpstats.compare_methods`` for R's ``dp_compare_methods``: no data, public facts only.

    Returns ``{"ok": True, "table": {column: values}, "chosen", "usable",
    "message", "text"}`` (``text``: the comparison as Python prints it, so both
    sides print one layout) or an error record.
    """
    try:
        from ..planning.comparison import compare_methods

        out = compare_methods(
            formula,
            _integral(n),
            eps,
            _declared(bounds),
            _declared(levels),
            estimator=estimator,
            delta=delta,
            target=target,
            se_share=se_share,
            max_rows=_integral(max_rows),
            units=None if units is None else _integral(units),
        )
        table = {column: out.table[column].tolist() for column in out.table.columns}
        return {
            "ok": True,
            "table": table,
            "chosen": out.chosen,
            "usable": out.usable,
            "message": out.message,
            "text": str(out),
        }
    except Exception as exc:  # reported to R as an R error, never swallowed
        return _error(exc)
