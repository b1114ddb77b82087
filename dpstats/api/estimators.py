"""The public entry points: formula -> design -> mechanism -> results."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import pandas as pd

from ..design.units import Units, bound_contributions, check_unit
from ..distributed.by_group import fit_by_group as fit_dask_by_group
from ..distributed.dask_design import dask_design, is_dask, supported
from ..frontend.formula import build_design, check_data
from ..frontend.metadata import check_bounds
from ..frontend.survey import SurveyDeclaration, declare_survey
from ..frontend.weights import planning_rows
from ..glm.links import LINKS
from ..groups.fit import fit_by_group
from ..groups.grouped_results import DPGroupedResults
from ..groups.partition import declare_groups
from ..mechanisms import MechanismSpec, PrivacyRequest, get_mechanism, weighted_methods
from ..mechanisms.quantiles import check_quantiles
from ..planning.binary_choice import choose_binary
from ..planning.facts import PublicFacts
from ..planning.refusal import PlannedCall, check_target
from ..planning.selection import choose_for_target
from ..privacy.accounting import PrivacySpent, check_budget, check_delta, check_eps, check_share
from ..privacy.budget import Accountant, check_accountant, requested_spend
from ..privacy.noise import RandomState, make_rng
from ..results.quantile_fits import DPQuantileFits
from ..results.regression import DPRegressionResults
from .binary_release import binary_release
from .unit_calls import check_unit_plan, unit_methods, unit_release


def dp_ols(
    formula: str,
    data: pd.DataFrame,
    eps: float | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "impute",
    *,
    rho: float | None = None,
    se_share: float | None = None,
    budget: Accountant | None = None,
    by: str | None = None,
    groups: Sequence | None = None,
    group_sizes: Mapping | None = None,
    count_share: float | None = None,
    n_jobs: int | None = None,
    force: bool = False,
    target: float | None = None,
    integers: Sequence[str] | None = None,
    unit: str | None = None,
    max_rows: int | None = None,
    weights: str | None = None,
    cluster: str | None = None,
    strata: str | None = None,
    **options: object,
) -> DPRegressionResults | DPGroupedResults:
    """Differentially private least squares from a formula.

    Parameters
    ----------
    formula : patsy formula, e.g. ``"y ~ x + C(region)"``, of row-wise maps
        only (dpstats/frontend/grammar.py): column names, numbers,
        ``+ - * / **``, comparisons, the element-wise functions ``np.log``,
        ``np.log1p``, ``np.exp``, ``np.sqrt``, ``np.abs``, ``np.sin``, ...,
        ``I()``, ``Q()``, ``C()`` with patsy's contrasts, interactions and
        ``- 1``. Anything that reads other rows (``x.mean()``, ``np.roll``,
        ranks, cumulative sums, ``center``, ``standardize``) is refused before
        the data are read.
    data : DataFrame (or dict of columns) holding the private rows, or a
        dask DataFrame (``pip install "dpstats[dask]"``) for the methods whose
        statistics are sums over rows (``method="auto"`` chooses among them once
        the rows are counted): dpstats/distributed/dask_design.py.
    eps : total privacy budget of the call (> 0, finite). What is reported
        never exceeds it.
    bounds : public bounds ``{name: (lower, upper)}`` for every numeric variable
        (or expression) the formula uses; the data are clipped to them.
    levels : public levels ``{name: [...]}`` of every categorical variable.
    method : ``"auto"`` or a registered mechanism (``"noisystats"``).
    delta : for approximate-DP mechanisms; must be 0 for pure ones.
    random_state : None (fresh OS entropy), an int, or a numpy Generator.
    rho : for a zCDP mechanism (``method="gradient", variant="zcdp"``), the
        rho of rho-zCDP, given instead of eps; a zCDP mechanism given eps and
        delta uses the largest rho that meets them (dpstats/privacy/accounting.py).
    se_share : the part of the budget spent on what the standard errors need
        (a noisy residual spread, say), in [0, 1); None takes the mechanism's
        default, 0 spends nothing on them (then only what post-processing of
        the point release gives for free is reported, NaN otherwise). The
        split is listed in ``res.privacy.split``; the whole still adds up to
        eps.
    missing : ``"impute"`` (default) gives every bad cell a row-wise
        treatment, so that no private row can make the call raise: a missing,
        non-finite or non-numeric numeric cell becomes the midpoint of its
        declared bounds (infinities the bound they pass), an undeclared or
        missing level the first declared level (dpstats/frontend/cells.py). The
        guarantee is unchanged; the estimate is biased towards the imputed
        values, so inspect the data first (:func:`dpstats.inspect`).
        ``"raise"`` is the curator's opt-in: it raises on the first bad cell,
        and that error describes confidential data (never for publication).
    budget : a :class:`~dpstats.privacy.budget.PrivacyBudget` the call is charged to.
        The call is refused (``BudgetExceeded``, a ValueError) before any data
        are read when it could overspend it; otherwise what ``res.privacy``
        reports is added to its ledger (dpstats/privacy/budget.py: the composition
        rules). eps is still required: it never defaults to what is left.
    by, groups : a grouped (small-area) fit: one fit per declared key
        ``groups`` of the column ``by``, returned as a
        :class:`~dpstats.groups.grouped_results.DPGroupedResults`. Rows whose key is
        not declared (NaN, another type) are dropped row-wise; a declared
        group with no rows gets a release like any other. On a dask
        DataFrame: the methods that run on one, with the pandas call's
        release (dpstats/distributed/by_group.py).
    group_sizes : ``{key: size}``, declared public group sizes: each group
        then spends the whole eps (parallel composition). Without it each
        group spends eps/2 (a replaced row can leave one group and join
        another), part of it (``count_share``, default 0.1) on a noisy size.
        dpstats/groups/partition.py states and proves the guarantee.
    n_jobs : worker processes for the group-by-group fits (None: a pool of
        every core when the data are large, 1: none). Where processes start
        by "spawn" (macOS, Windows) a script that uses the pool needs the
        usual ``if __name__ == "__main__":`` guard.
    force, target : refusing before spending (dpstats/planning/refusal.py).
        ``method="auto"`` raises ``RefusedBeforeSpending`` (a ValueError that
        carries the plan) before any data are read and charges nothing when,
        from public facts, its best mechanism is predicted to fail more often
        than not, or to err by more than ``target`` (the first regressor's
        coefficient, in its units), or without a target by more than 10
        standard errors of the non-private fit. ``force=True``, or an explicit
        ``method=``, fits anyway, and the summary's status line carries the
        prediction. Grouped fits are not refused per group.
    integers : the numeric variables that take whole values only, each with
        whole-number bounds: public metadata, declared like the bounds (a
        pandas dtype depends on the values: docs/DESIGN.md section 2). The
        perturbed histogram gives each value a cell of its own where the
        budget allows (dpstats/mechanisms/histogram/layout.py); one fit on a
        pandas DataFrame.
    unit, max_rows : the privacy unit is every row of one value of the column
        ``unit`` (a person, a firm), of which at most ``max_rows`` rows (public,
        required with ``unit``) are kept, chosen without looking at the values;
        ``res.nobs`` counts the kept rows. Neighbouring datasets then differ in
        every row of one unit, the units and their numbers of rows being public
        (dpstats/design/units.py). Tukey depth (``delta > 0``) and NoisyStats
        prove the guarantee at that level and cluster their standard errors by
        unit; every other mechanism runs at the row level with eps / max_rows
        (group privacy, dpstats/mechanisms/units.py) and reports no standard
        errors, and ``method="auto"`` chooses among the first two. The summary's
        "Neighbours" line names the unit and k. One fit, on a pandas DataFrame or on a Dask DataFrame, whose
        rows are then shuffled by unit on the workers (dpstats/distributed/dask_units.py).
    weights : the survey-weight column, its range declared in ``bounds`` (``bounds={"wt": (0, 5000)}``; a
        weight outside it is clipped, a missing or non-numeric one is the range's midpoint:
        dpstats/frontend/weights.py). The fit is weighted least squares (statsmodels' WLS, survey::svyglm's
        point estimate), with design-based standard errors: the weighted sandwich, one PSU per row
        (``method="noisystats"``, auto's only choice with weights: :func:`dpstats.mechanisms.weighted_methods`).
    cluster, strata : the survey's PSU and stratum columns, their levels declared in ``levels``
        (dpstats/frontend/survey.py): the standard errors are then the linearisation ones of R survey's
        ``svyglm`` for ``svydesign(ids = ~cluster, strata = ~strata, weights = ~weights, nest = TRUE)``, from
        the PSUs' noisy score totals (dpstats/uncertainty/design_meat.py).
    **options : the mechanism's hyperparameters.

    Neighbouring datasets differ in one row and have the same n (public), unless ``unit`` is given.
    """
    eps, rho = check_budget(eps, rho)
    accountant = check_accountant(budget)
    privacy = PrivacyRequest(eps=eps, delta=check_delta(delta), rho=rho, se_share=check_share(se_share))
    plan = _plan("ols", privacy, method, options, force, target, integers, check_unit(unit, max_rows))
    plan = surveyed(plan, "ols", weights, cluster, strata)
    _check_ungrouped(by, groups, group_sizes, count_share, n_jobs, plan)
    if by is not None:
        grouped = _grouped_call(plan, by, groups, group_sizes, count_share, missing)
        return _charged(
            accountant,
            plan,
            lambda: grouped("ols", formula, data, bounds, levels, random_state, n_jobs),
            formula=formula,
        )
    return _charged(
        accountant,
        plan,
        lambda: _fit("ols", formula, data, plan, bounds, levels, random_state, missing),
        formula=formula,
    )


def dp_quantreg(
    formula: str,
    data: pd.DataFrame,
    q: float | Sequence[float] = 0.5,
    *,
    eps: float,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "impute",
    se_share: float | None = None,
    budget: Accountant | None = None,
    by: str | None = None,
    groups: Sequence | None = None,
    group_sizes: Mapping | None = None,
    count_share: float | None = None,
    n_jobs: int | None = None,
    force: bool = False,
    target: float | None = None,
    integers: Sequence[str] | None = None,
    unit: str | None = None,
    max_rows: int | None = None,
    weights: str | None = None,
    cluster: str | None = None,
    strata: str | None = None,
    **options: object,
) -> DPRegressionResults | DPQuantileFits | DPGroupedResults:
    """Differentially private quantile regression from a formula.

    Parameters
    ----------
    formula, data, bounds, levels, delta, random_state, missing, se_share : as
        for :func:`dp_ols`. Bounds are needed for the response and every numeric
        variable (the data are clipped to them and they define the scaled
        problem of the mechanism).
    q : the quantile tau in (0, 1), or a list of distinct quantiles.
    eps : total privacy budget of the call; with several quantiles it is split
        evenly between them (basic composition), and the split is reported.
    method : ``"auto"`` (the perturbed histogram, or KNG for one design
        column: dpstats/planning/selection.py) or a registered
        quantile-regression mechanism.
    force, target : as for :func:`dp_ols`; with several quantiles each
        quantile's share of eps is judged.
    integers, unit, max_rows : as for :func:`dp_ols`; with ``unit`` and ``max_rows > 1``, auto needs
        ``delta > 0`` (Tukey depth's models of whole units).
    weights, cluster, strata : a survey's weights and design, as for :func:`dp_ols`; the fit is the weighted
        quantile regression (quantreg's ``rq(weights=)``).
    **options : the mechanism's hyperparameters; for ``"kng"``: ``norm``
        (``"linf"``, ``"l2"``, ``"l1"``), ``B`` (the radius of the domain
        ``||theta||_1 <= B`` on the scaled problem, default 2) and ``steps``
        (the chain length; see dpstats/mechanisms/kng/mechanism.py).

    budget : a :class:`~dpstats.privacy.budget.PrivacyBudget`, as for :func:`dp_ols`;
        several quantiles are one release, charged once with the call's eps.
    by, groups, group_sizes, count_share, n_jobs : a grouped fit, as for
        :func:`dp_ols` (one quantile).

    Returns a :class:`~dpstats.results.regression.DPRegressionResults` for one quantile,
    a :class:`~dpstats.results.quantile_fits.DPQuantileFits` for a list.
    """
    quantiles = check_quantiles(q)
    eps, delta, share = check_eps(eps), check_delta(delta), check_share(se_share)
    accountant = check_accountant(budget)
    request = PrivacyRequest(eps=eps, delta=delta, se_share=share)
    plan = _plan("quantreg", request, method, options, force, target, integers, check_unit(unit, max_rows))
    plan = surveyed(plan, "quantreg", weights, cluster, strata)
    _check_ungrouped(by, groups, group_sizes, count_share, n_jobs, plan)
    if by is not None:
        if not isinstance(quantiles, float):
            raise ValueError("a grouped fit (by=) takes one quantile q")
        grouped = _grouped_call(plan, by, groups, group_sizes, count_share, missing)
        tau = quantiles
        return _charged(
            accountant,
            plan,
            lambda: grouped("quantreg", formula, data, bounds, levels, random_state, n_jobs, tau),
            formula=formula,
            q=(tau,),
        )
    if isinstance(quantiles, float):
        tau = quantiles
        return _charged(
            accountant,
            plan,
            lambda: _fit("quantreg", formula, data, plan, bounds, levels, random_state, missing, tau),
            formula=formula,
            q=(tau,),
        )
    multi = quantiles
    return _charged(
        accountant,
        plan,
        lambda: _several_quantiles(formula, data, multi, plan, bounds, levels, random_state, missing),
        formula=formula,
        q=multi,
    )


def _several_quantiles(
    formula: str,
    data: pd.DataFrame,
    quantiles: tuple[float, ...],
    plan: _Plan,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    random_state: RandomState,
    missing: str,
) -> DPQuantileFits:
    """Each quantile with an equal part of the budget (basic composition); the call reports the whole.
    With ``unit=`` every quantile fits the same kept rows (bounding them again keeps them all)."""
    rng = make_rng(random_state)  # one stream for all quantiles: their noise is independent
    if plan.unit is not None and not is_dask(data):
        data, _ = _bounded(check_data(data), plan, rng)
    eps, delta, k = float(plan.privacy.eps or 0.0), plan.privacy.delta, len(quantiles)
    part = replace(plan, privacy=replace(plan.privacy, eps=eps / k, delta=delta / k))
    fits = tuple(_fit("quantreg", formula, data, part, bounds, levels, rng, missing, tau) for tau in quantiles)
    split = tuple((f"q={tau:g}", eps / k) for tau in quantiles)
    caveats = tuple(dict.fromkeys(c for fit in fits for c in fit.privacy.caveats))  # each once, in order
    spent = PrivacySpent(
        notion="pure" if delta == 0 else "approx",
        eps=eps,
        delta=delta,
        split=split,
        caveats=caveats,
        proven=all(fit.privacy.proven for fit in fits),
    )
    return DPQuantileFits(quantiles=quantiles, fits=fits, privacy=spent)


def planned_spend(
    estimator: str,
    *,
    eps: float | None = None,
    delta: float = 0.0,
    rho: float | None = None,
    method: str = "auto",
    se_share: float | None = None,
    force: bool = False,
    target: float | None = None,
    **options: object,
) -> PrivacySpent:
    """The most a ``dp_ols`` (``estimator="ols"``), ``dp_quantreg``, ``dp_logit`` or ``dp_probit`` call with
    these public inputs can report: what a :class:`~dpstats.privacy.budget.PrivacyBudget` checks before the call
    reads any data (a binary call's ``margins_share`` is part of its eps)."""
    if estimator not in ("ols", "quantreg", *LINKS):
        raise ValueError("estimator must be 'ols', 'quantreg', 'logit' or 'probit'")
    if estimator in LINKS:
        check_share(options.pop("margins_share", None), "margins_share")
    eps, rho = check_budget(eps, rho)
    request = PrivacyRequest(eps=eps, delta=check_delta(delta), rho=rho, se_share=check_share(se_share))
    plan = _plan(estimator, request, method, options, force, target)
    return requested_spend(plan.notion, eps, plan.privacy.delta, rho)


@dataclass(frozen=True)
class _Plan:
    """The public part of a call, checked before any data are read.

    ``spec`` is None for ``method="auto"`` (chosen once n is known); ``notion``
    is what the call will report ("pure", "approx" or "zcdp"), known already.
    """

    spec: MechanismSpec | None
    hyper: Mapping[str, object]
    need_bounds: bool
    notion: str
    privacy: PrivacyRequest = field(repr=False)
    force: bool = False
    target: float | None = None
    integers: Sequence[str] | str | None = None  # declared whole-valued variables (checked by build_design)
    unit: tuple[str, int] | None = None  # the privacy unit's column and max_rows (dpstats/design/units.py)
    margins_share: float = 0.0  # a binary fit's part of eps for its marginal effects (dpstats/api/binary_release.py)
    survey: SurveyDeclaration | None = None  # weights, PSUs and strata (dpstats/frontend/survey.py)


def _plan(
    estimator: str,
    privacy: PrivacyRequest,
    method: str,
    options: Mapping[str, object],
    force: object = False,
    target: object = None,
    integers: object = None,
    unit: tuple[str, int] | None = None,
) -> _Plan:
    """Every check of the method, its options, the privacy request and the refusal's inputs (public only)."""
    if not isinstance(force, bool):
        raise ValueError("force must be True or False")
    checked = {"force": force, "target": check_target(target), "integers": integers, "unit": unit}
    if method == "auto":
        if options:
            raise ValueError(f"options {sorted(options)} need an explicit method=...")
        if privacy.rho is not None:
            raise ValueError("method='auto' takes eps (and delta); rho is for method='gradient', variant='zcdp'")
        plan = _Plan(None, {}, True, "approx" if privacy.delta > 0 else "pure", privacy, **checked)
    else:
        spec = get_mechanism(method, estimator)
        hyper = spec.check_options(options)
        spec.check_privacy(privacy, hyper)
        plan = _Plan(spec, hyper, spec.needs_bounds, spec.notion(privacy, hyper), privacy, **checked)
    if unit is not None:
        check_unit_plan(plan.spec, privacy, plan.notion, estimator, unit[1])
    return plan


def surveyed(plan: _Plan, estimator: str, weights: object, cluster: object, strata: object) -> _Plan:
    """The plan with the call's survey declaration (dpstats/frontend/survey.py), checked before any data are
    read: an explicit method must take weights (``MechanismSpec.weighted``), and a survey design is one fit of
    rows (no ``unit=``)."""
    survey = declare_survey(weights, cluster, strata)
    if survey is None:
        return plan
    if plan.spec is not None and estimator not in plan.spec.weighted:
        takes = ", ".join(repr(m) for m in sorted(weighted_methods(estimator))) or "none yet"
        raise ValueError(
            f"method={plan.spec.name!r} does not take survey weights: {plan.spec.unweighted_reason}. The methods "
            f"that do for this estimator: {takes} (and method='auto', which chooses among them)"
        )
    if plan.unit is not None:
        raise ValueError("weights= and unit= do not combine: a survey's design-based errors protect rows")
    return replace(plan, survey=survey)


def survey_hyperparameters(survey: SurveyDeclaration | None) -> dict[str, str]:
    """How the result names its survey declaration (its hyperparameters' line)."""
    if survey is None:
        return {}
    named = {"weights": survey.weights, "cluster": survey.cluster, "strata": survey.strata}
    return {key: value for key, value in named.items() if value is not None}


Result = TypeVar("Result", DPRegressionResults, DPQuantileFits, DPGroupedResults)


def _check_ungrouped(
    by: str | None, groups: object, group_sizes: object, count_share: object, n_jobs: object, plan: _Plan
) -> None:
    """The grouping arguments need ``by=``; ``n_jobs`` is a positive number of processes; ``unit=`` is for
    one fit."""
    if by is not None and plan.unit is not None:
        raise ValueError("unit= is for one fit: a grouped fit (by=) protects rows")
    if by is None and any(v is not None for v in (groups, group_sizes, count_share, n_jobs)):
        raise ValueError("groups, group_sizes, count_share and n_jobs are for a grouped fit: pass by='<column>'")
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1):
        raise ValueError("n_jobs must be None or a positive integer")


def _grouped_call(
    plan: _Plan,
    by: str,
    groups: Sequence | None,
    group_sizes: Mapping | None,
    count_share: float | None,
    missing: str,
) -> Callable[..., DPGroupedResults]:
    """Check a grouped call's public inputs; return the fit to run (dpstats/groups/fit.py)."""
    declaration = declare_groups(by, groups, group_sizes, count_share)
    if plan.target is not None and plan.spec is not None:
        raise ValueError("target= in a grouped fit (by=) judges each group's choice of method='auto'")
    if plan.integers is not None:
        raise ValueError("integers= is for one fit on a pandas DataFrame, not a grouped fit (by=)")
    if missing != "impute":
        raise ValueError("a grouped fit imputes bad cells row-wise (missing='impute'): its pad rows are missing cells")
    if plan.privacy.rho is not None or plan.notion == "zcdp":
        raise ValueError("a grouped fit takes eps (and delta), not rho, and composes its groups as (eps, delta)-DP")

    def run(estimator, formula, data, bounds, levels, random_state, n_jobs, q=None) -> DPGroupedResults:
        checked = dict(spec=plan.spec, hyper=plan.hyper, privacy=plan.privacy, notion=plan.notion)
        call = dict(need_bounds=plan.need_bounds, bounds=bounds, levels=levels, random_state=random_state, q=q)
        if is_dask(data):  # the rows stay on the workers: dpstats/distributed/by_group.py
            if plan.survey is not None:
                raise ValueError("weights= is for a pandas DataFrame, not a Dask DataFrame")
            return fit_dask_by_group(estimator, formula, data, declaration, target=plan.target, **checked, **call)
        return fit_by_group(
            estimator, formula, data, declaration, n_jobs=n_jobs, target=plan.target, survey=plan.survey,
            **checked, **call,
        )  # fmt: skip

    return run


def _charged(
    budget: Accountant | None,
    plan: _Plan,
    release: Callable[[], Result],
    *,
    formula: str,
    q: tuple[float, ...] | None = None,
) -> Result:
    """Run ``release`` charged to ``budget``: refused before it reads any data if it could overspend,
    recorded with what its result reports once it has released (a raise records nothing)."""
    if budget is None:
        return release()
    request = plan.privacy
    budget.check(requested_spend(plan.notion, request.eps, request.delta, request.rho))
    res = release()
    fits = res.fits if isinstance(res, DPQuantileFits | DPGroupedResults) else (res,)
    methods = res.methods if isinstance(res, DPGroupedResults) else [fit.method for fit in fits]
    budget.record(
        res.privacy,
        formula=formula,
        estimator=fits[0].estimator,
        method=", ".join(dict.fromkeys(methods)),  # a grouped auto may choose several
        q=q,
        failed=any(fit.failed for fit in fits),
        weights=fits[0].survey,
    )
    return res


def _fit(
    estimator: str,
    formula: str,
    data: pd.DataFrame,
    plan: _Plan,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    random_state: RandomState,
    missing: str,
    q: float | None = None,
) -> DPRegressionResults:
    """One fit of a checked plan: the first step that reads the data is ``build_design``;
    ``method="auto"`` chooses from n, the budget and the design's shape, which
    the formula and the declarations alone decide (dpstats/planning/)."""
    privacy, spec, hyper, reason, note, units = plan.privacy, plan.spec, plan.hyper, None, None, None
    rng = make_rng(random_state)
    dask = is_dask(data)
    binary = estimator in LINKS
    allowed = unit_methods(plan.unit, frozenset(supported(estimator)) if dask else None, spec is None, estimator)
    if plan.survey is not None:  # auto chooses among the mechanisms that take weights
        weighted = weighted_methods(estimator)
        allowed = weighted if allowed is None else frozenset(allowed) & weighted
    if not dask:
        data = check_data(data)
        data, units = _bounded(data, plan, rng)
        rows = _planning_rows(len(data), plan, bounds)
        note = _plan_note(estimator, formula, rows, list(data.columns), plan, bounds, levels, units, allowed)
    if dask:  # the rows stay on the workers: dpstats/distributed/dask_design.py
        if plan.integers is not None or plan.survey is not None:
            raise ValueError("integers= and weights= are for one fit on a pandas DataFrame, not a Dask DataFrame")
        design, formula_spec = dask_design(
            formula, data, bounds, levels, spec, estimator, plan.need_bounds, missing, plan.unit, rng
        )  # with unit=, the rows each unit keeps: dpstats/distributed/dask_units.py
        columns = list(data.columns)
        note = _plan_note(estimator, formula, design.n, columns, plan, bounds, levels, design.units, allowed)
    else:
        design, formula_spec = build_design(
            formula, data, bounds, levels, need_bounds=plan.need_bounds or binary, missing=missing,
            integers=plan.integers, binary=binary, survey=plan.survey,
        )  # fmt: skip
    if units is not None:
        design = replace(design, units=units)
    if spec is None:
        facts = PublicFacts.of(design, privacy.eps, privacy.delta, estimator, privacy.se_share)
        facts = replace(facts, n=_planning_rows(design.n, plan, bounds))
        choice = choose_binary(facts, allowed, plan.force) if binary else choose_for_target(facts, allowed, plan.target)
        reason = choice.reason
        if choice.eps is not None:  # more is predicted no better on this design: spend less (never more)
            privacy = replace(privacy, eps=min(choice.eps, privacy.eps))
        spec = get_mechanism(choice.method, estimator)
        hyper = spec.check_options(choice.options)
        if not spec.needs_delta and spec.notion(replace(privacy, delta=0.0), hyper) == "pure":
            privacy = replace(privacy, delta=0.0)  # a pure mechanism chosen under delta > 0 spends no delta
        spec.check_privacy(privacy, hyper)
    spec.check_design(design)
    quantile = {} if q is None else {"q": q}  # quantile regression: the mechanism's fit gets q
    at_fit = None
    if binary:
        release, at_fit = binary_release(spec, design, privacy, rng, hyper, estimator, plan.margins_share)
    else:
        release = unit_release(spec, design, privacy, rng, {**hyper, **quantile})
    return DPRegressionResults.from_release(
        release,
        estimator=estimator,
        spec=formula_spec,
        y_name=design.y_name,
        method=spec.name,
        method_title=spec.title,
        citation=spec.citation,
        nobs=design.n,
        declared_bounds=check_bounds(bounds),
        hyperparameters={**hyper, **survey_hyperparameters(plan.survey)},
        method_reason=reason,
        plan_note=note,
        at_fit=at_fit,
    )


def _plan_note(
    estimator: str,
    formula: str,
    n: int,
    columns: list[str],
    plan: _Plan,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    units: Units | None,
    allowed: frozenset[str] | None,
) -> str | None:
    """The plan's verdict on this call from its public facts (n, the data's column names, the declarations),
    auto choosing among ``allowed`` (None: every mechanism; the unit-native ones with ``unit=``; those that run
    on a Dask DataFrame there, whose rows are counted first): ``method="auto"`` raises on a negative one unless
    forced; otherwise it goes into the result's status. A mechanism that needs no bounds, or a budget given as
    rho, has no prediction to judge, nor yet a binary-response model (dpstats/planning/binary_choice.py)."""
    request = plan.privacy
    if request.eps is None or not plan.need_bounds or estimator in LINKS:
        return None
    unit_rows = 1 if plan.unit is None else plan.unit[1]
    call = PlannedCall(
        formula, n, request.eps, request.delta, bounds, levels, estimator, request.se_share, plan.target,
        allowed, unit_rows, None if units is None else units.count,
    )  # fmt: skip
    note = call.verdict("auto" if plan.spec is None else plan.spec.name, plan.hyper, columns)
    if note is not None and plan.spec is None and not plan.force:
        raise call.refusal(note)
    return note


def _planning_rows(n: int, plan: _Plan, bounds: Mapping[str, Sequence[float]] | None) -> int:
    """n, or with survey weights the unweighted rows they are worth to the predictions
    (dpstats/frontend/weights.py, ``planning_rows``; the weights' range is checked when the design is built)."""
    if plan.survey is None or bounds is None or plan.survey.weights not in bounds:
        return n
    lo, hi = (float(v) for v in bounds[plan.survey.weights])
    return planning_rows(n, (lo, hi)) if 0.0 <= lo < hi < float("inf") else n


def _bounded(data: pd.DataFrame, plan: _Plan, rng) -> tuple[pd.DataFrame, Units | None]:
    """The rows a call with ``unit=`` keeps (at most ``max_rows`` per unit: dpstats/design/units.py), and their
    units; the data unchanged without ``unit=``. The unit's column must exist (a schema fact)."""
    if plan.unit is None:
        return data, None
    name, k = plan.unit
    if name not in data.columns:
        raise ValueError(f"unit={name!r} is not a column of the data")
    kept, units = bound_contributions(data[name], name, k, rng)
    return data.iloc[kept], units
