"""A grouped call: each declared group's rows brought to its public size, one design, one fit per group.

The privacy of it (keys, sizes, the budget per group, the proof) is in
dpstats/groups/partition.py. Here: the data are mapped to groups row-wise, each group
keeps its first m_g rows or is padded with rows of missing cells (imputed
row-wise by the front end, dpstats/frontend/cells.py), one design is built for all
groups at once, and every group gets the ungrouped mechanism at its size:
NoisyStats in one vectorised batch where it applies, standard errors
included (dpstats/mechanisms/noisystats/grouped.py), the other mechanisms group by
group, on a process pool when the work is large. ``method="auto"`` chooses
per group from the group's public size (dpstats/groups/auto.py), after a
release of the data's spread over all groups when the call has rows
enough (dpstats/groups/spread.py); the groups of one choice are fitted
together as above. Each group's generator is
spawned from the call's (``Generator.spawn``), so the results do not depend
on the pool or the number of workers. A dask DataFrame goes to
dpstats/distributed/by_group.py, which builds on :func:`assemble` and
:func:`fit_one` (``n_jobs`` plays no part there).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import numpy as np
import pandas as pd

from ..design.matrix import Design
from ..frontend.formula import FormulaSpec, build_design
from ..frontend.metadata import check_bounds
from ..frontend.survey import SurveyDeclaration
from ..mechanisms import MechanismSpec, PrivacyRequest, get_mechanism
from ..mechanisms.base import Release, failed_release
from ..mechanisms.noisystats import grouped as noisystats_grouped
from ..privacy.accounting import PrivacySpent
from ..privacy.noise import RandomState, make_rng
from . import spread
from .auto import GroupChoice, choose_per_group
from .grouped_results import DPGroupedResults
from .partition import GroupBudget, GroupDeclaration, group_budget, group_codes, layout, target_sizes

#: From this many rows (over all groups) the group-by-group fits run on a process pool by default.
POOL_ROWS = 500_000
#: A progress bar (tqdm, where installed) shows on a terminal once the group-by-group fits have run this many seconds.
PROGRESS_SECONDS = 3.0


def fit_by_group(
    estimator: str,
    formula: str,
    data: pd.DataFrame,
    declaration: GroupDeclaration,
    *,
    spec: MechanismSpec | None,
    hyper: Mapping[str, object],
    privacy: PrivacyRequest,
    notion: str,
    need_bounds: bool,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    random_state: RandomState,
    n_jobs: int | None,
    q: float | None = None,
    target: float | None = None,
    survey: SurveyDeclaration | None = None,
) -> DPGroupedResults:
    """One release per declared group (module docstring); public inputs were checked by the caller
    (``target`` with ``method="auto"`` only: dpstats/groups/auto.py). With ``survey`` every group's fit is
    weighted (its mechanism's weighted release); a pad row weighs the declared range's lower end."""
    frame = pd.DataFrame(data)
    if declaration.by not in frame.columns:
        raise ValueError(f"by={declaration.by!r} is not a column of the data")
    count_rng, fit_rng, spread_rng = make_rng(random_state).spawn(3)
    spread_eps = 0.0
    if spec is None:  # a grouped auto may first spend a share on the data's spread (public facts decide)
        public, _ = build_design(formula, frame.iloc[:0], bounds, levels, need_bounds=need_bounds, min_rows=0)
        spread_eps = spread.SHARE * privacy.eps if spread.worth_releasing(public, len(frame), privacy.eps) else 0.0
        if declaration.public_sizes and target is not None:
            _refuse_if_no_group_answers(public, declaration, replace(privacy, eps=privacy.eps - spread_eps),
                                        notion, estimator, target)  # fmt: skip
    budget = group_budget(replace(privacy, eps=privacy.eps - spread_eps), declaration, notion)
    request = budget.request
    codes = group_codes(frame[declaration.by], declaration.keys)
    sizes = target_sizes(declaration, codes, budget.count_eps, count_rng)
    kept, pads = layout(codes, sizes)
    take = _take(kept, codes, sizes) if pads.any() else kept  # no pad rows: the kept rows, group by group
    design, formula_spec = build_design(
        formula, _padded(frame, take), bounds, levels, need_bounds=need_bounds, missing="impute", survey=survey
    )
    if design.weights is not None and design.weight_bounds is not None:
        design = replace(design, weights=np.where(take < 0, design.weight_bounds[0], design.weights))
    quantile = {} if q is None else {"q": q}
    if spec is None:
        released = None
        if spread_eps > 0:
            released = spread.release(design, sizes, spread_eps, budget.changed_groups, spread_rng)
            budget = spread.charged(budget, spread_eps)
        choices = choose_per_group(design, sizes, request, estimator, released, target)
        releases = _fit_choices(choices, estimator, design, sizes, budget, fit_rng, quantile, n_jobs)
        first = next((c for c in choices if c.spec is not None), choices[0])
        return assemble(
            declaration, budget, first.spec, first.options, first.reason, design, formula_spec, sizes, releases,
            estimator, bounds, per_group=per_group(choices),
        )  # fmt: skip
    spec.check_design(design)
    releases = _fit_with(spec, hyper, estimator, design, sizes, budget, fit_rng, quantile, n_jobs)
    return assemble(declaration, budget, spec, hyper, None, design, formula_spec, sizes, releases, estimator, bounds)


def _refuse_if_no_group_answers(
    public: Design,
    declaration: GroupDeclaration,
    privacy: PrivacyRequest,
    notion: str,
    estimator: str,
    target: float,
) -> None:
    """Raise, before anything is spent, when the public sizes leave no group a mechanism within ``target``
    (which candidates each group keeps does not depend on the spread released later, only their ranking)."""
    request = group_budget(privacy, declaration, notion).request
    choices = choose_per_group(public, declaration.sizes, request, estimator, None, target)
    if all(c.spec is None for c in choices):
        raise ValueError(f"every group is refused before spending: {choices[0].reason}")


def _fit_with(
    spec: MechanismSpec,
    hyper: Mapping[str, object],
    estimator: str,
    design: Design,
    sizes: np.ndarray,
    budget: GroupBudget,
    rng: np.random.Generator,
    quantile: Mapping[str, float],
    n_jobs: int | None,
) -> Sequence[Release]:
    """Every group's release by one mechanism: NoisyStats' batch where it applies (public facts of the design
    decide: :func:`~dpstats.mechanisms.noisystats.grouped.vectorised`), with or without standard errors, else
    group by group."""
    request = budget.request
    if spec.name == "noisystats" and noisystats_grouped.vectorised(design):
        return noisystats_grouped.fit_groups(design, sizes, request, rng, budget.changed_groups, **hyper)
    return _group_by_group(spec, estimator, design, sizes, request, rng, {**hyper, **quantile}, n_jobs)


def _fit_choices(
    choices: tuple[GroupChoice, ...],
    estimator: str,
    design: Design,
    sizes: np.ndarray,
    budget: GroupBudget,
    rng: np.random.Generator,
    quantile: Mapping[str, float],
    n_jobs: int | None,
) -> list[Release]:
    """Every group's release by its own choice (:func:`fit_choices`), the groups of one choice fitted together
    on their rows."""
    starts = np.cumsum(sizes) - sizes

    def fit_kind(choice: GroupChoice, groups: np.ndarray, kind_rng: np.random.Generator) -> Sequence[Release]:
        rows = np.concatenate([np.arange(starts[g], starts[g] + sizes[g]) for g in groups])
        part = design.subset(rows)
        choice.spec.check_design(part)
        return _fit_with(
            choice.spec, choice.options, estimator, part, sizes[groups], budget, kind_rng, quantile, n_jobs
        )

    return fit_choices(choices, budget, design.n_columns, rng, fit_kind)


def fit_choices(
    choices: tuple[GroupChoice, ...],
    budget: GroupBudget,
    columns: int,
    rng: np.random.Generator,
    fit_kind: Callable[[GroupChoice, np.ndarray, np.random.Generator], Sequence[Release]],
) -> list[Release]:
    """Every group's release by its own choice: ``fit_kind(choice, groups, rng)`` fits the groups of one
    choice together, each choice from a spawned generator in the order the choices first appear; a group with
    no choice (refused before spending) gets a failed release that spent nothing."""
    kinds: dict[tuple, GroupChoice] = {}
    for choice in choices:
        kinds.setdefault(choice.key, choice)
    releases: list[Release | None] = [None] * len(choices)
    for choice, kind_rng in zip(kinds.values(), rng.spawn(len(kinds)), strict=True):
        groups = np.flatnonzero([c.key == choice.key for c in choices])
        if choice.spec is None:
            spent = PrivacySpent(notion="approx" if budget.request.delta > 0 else "pure", eps=0.0)
            for g in groups:
                releases[g] = failed_release(columns, spent, choice.reason, "no standard errors: no fit")
            continue
        for g, release in zip(groups, fit_kind(choice, groups, kind_rng), strict=True):
            releases[g] = release
    return releases


def per_group(choices: tuple[GroupChoice, ...]) -> tuple[Mapping[str, object], ...]:
    """Each group's method in the results' context (empty when every group has the same choice)."""
    if len({c.key for c in choices}) == 1:
        return ()
    return tuple(
        {"method": "none", "method_title": "none", "citation": "", "hyperparameters": {}, "method_reason": c.reason}
        if c.spec is None
        else {"method": c.spec.name, "method_title": c.spec.title, "citation": c.spec.citation,
              "hyperparameters": c.options, "method_reason": c.reason}
        for c in choices
    )  # fmt: skip


def assemble(
    declaration: GroupDeclaration,
    budget: GroupBudget,
    spec: MechanismSpec | None,
    hyper: Mapping[str, object],
    reason: str | None,
    design: Design,
    formula_spec: FormulaSpec,
    sizes: np.ndarray,
    releases: Sequence[Release],
    estimator: str,
    bounds: Mapping[str, Sequence[float]] | None,
    per_group: tuple[Mapping[str, object], ...] = (),
) -> DPGroupedResults:
    """The grouped results of the groups' releases (public metadata only); ``per_group``: each group's own
    method, where a grouped auto chose differently for different groups."""
    context = {
        "estimator": estimator,
        "spec": formula_spec,
        "y_name": design.y_name,
        "method": "none" if spec is None else spec.name,
        "method_title": "none: every group was refused before spending" if spec is None else spec.title,
        "citation": "" if spec is None else spec.citation,
        "declared_bounds": check_bounds(bounds),
        "hyperparameters": hyper,
        "method_reason": reason,
    }
    return DPGroupedResults(
        by=declaration.by,
        keys=declaration.keys,
        releases=tuple(releases) if isinstance(releases, list) else releases,  # a batch's stay lazy
        sizes=tuple(int(m) for m in sizes),
        context=context,
        privacy=budget.spent,
        public_sizes=declaration.public_sizes,
        per_group=per_group,
    )


def _take(kept: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The data's row at every position of the padded rows (-1: a pad row), group by group: sizes[g] each.

    ``kept`` comes group by group (:func:`dpstats.groups.partition.layout`); each kept
    row goes to its group's block, the rest of the block is pad rows.
    """
    kept_codes = codes[kept]
    counts = np.bincount(kept_codes, minlength=sizes.size)
    block = np.cumsum(sizes) - sizes
    first_kept = np.cumsum(counts) - counts
    take = np.full(int(sizes.sum()), -1, dtype=np.int64)
    take[block[kept_codes] + np.arange(kept.size) - first_kept[kept_codes]] = kept
    return take


def _padded(frame: pd.DataFrame, take: np.ndarray) -> pd.DataFrame:
    """The rows at :func:`_take`'s positions, a pad row being a row of missing cells."""
    if take.size == len(frame) and np.array_equal(take, np.arange(take.size)):
        return frame  # every row kept, already group by group
    columns = [pd.api.extensions.take(frame.iloc[:, j].array, take, allow_fill=True) for j in range(frame.shape[1])]
    return pd.DataFrame(dict(enumerate(columns))).set_axis(frame.columns, axis=1)


def _fit_chunk(
    method: str,
    estimator: str,
    designs: list[Design],
    request: PrivacyRequest,
    rngs: list[np.random.Generator],
    options: Mapping[str, object],
) -> list[Release]:
    """Fit a chunk of groups (runs in a worker process)."""
    spec = get_mechanism(method, estimator)
    return [fit_one(spec, d, request, rng, options) for d, rng in zip(designs, rngs, strict=True)]


def fit_one(
    spec: MechanismSpec,
    design: Design,
    request: PrivacyRequest,
    rng: np.random.Generator,
    options: Mapping[str, object],
) -> Release:
    """One group's release; a group too small for the mechanism gets a failed release.

    A mechanism raises only on public inputs (docs/ARCHITECTURE.md: data never
    make ``fit`` raise); here its n is the group's public or released size,
    so refusing it is a failure of that group's release, not of the call.
    """
    try:
        return spec.fit(design, request, rng, **options)
    except ValueError as refusal:
        spent = PrivacySpent(notion="approx" if request.delta > 0 else "pure", eps=float(request.eps),
                             delta=request.delta)  # fmt: skip
        reason = f"this group's size ({design.n} rows) is refused by method={spec.name!r}: {refusal}"
        return failed_release(design.n_columns, spent, reason, "no standard errors: the release failed")


def _group_by_group(
    spec: MechanismSpec,
    estimator: str,
    design: Design,
    sizes: np.ndarray,
    request: PrivacyRequest,
    rng: np.random.Generator,
    options: Mapping[str, object],
    n_jobs: int | None,
) -> list[Release]:
    """The mechanism on each group's slice, with its own spawned generator; a pool when the work is large."""
    ends = np.cumsum(sizes)
    designs = [design.subset(slice(int(e - s), int(e))) for s, e in zip(sizes, ends, strict=True)]
    rngs = rng.spawn(len(designs))
    workers = (os.cpu_count() or 1) if n_jobs is None and design.n >= POOL_ROWS else (n_jobs or 1)
    if design.variables is not None:  # its public encode map need not pickle
        workers = 1
    progress = _progress(len(designs))
    if workers <= 1:
        releases = []
        for d, r in zip(designs, rngs, strict=True):
            releases.append(fit_one(spec, d, request, r, options))
            progress.update(1)
        progress.close()
        return releases
    chunk = max(1, len(designs) // (8 * workers))
    starts = range(0, len(designs), chunk)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(_fit_chunk, spec.name, estimator, designs[i : i + chunk], request, rngs[i : i + chunk], options)
            for i in starts
        ]
        releases = []
        for future in futures:
            part = future.result()
            releases.extend(part)
            progress.update(len(part))
    progress.close()
    return releases


class _NoProgress:
    def update(self, n: int) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def _progress(total: int) -> object:
    """A tqdm bar that appears after :data:`PROGRESS_SECONDS` on a terminal (where tqdm is installed; not in a
    log or a pipe), else nothing."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoProgress()
    return tqdm(total=total, desc="groups", unit="group", delay=PROGRESS_SECONDS, disable=None)
