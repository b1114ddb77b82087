"""A grouped call on a Dask DataFrame: per-group sums over the partitions, the noise drawn on the client.

The release is that of the pandas grouped call (dpstats/groups/fit.py) for
the mechanisms whose statistics are sums over rows (``MechanismSpec.distributed``,
dpstats/distributed/dask_design.py): each declared group keeps its first m_g rows in data
order and is padded to m_g rows with rows of missing cells
(dpstats/groups/partition.py). On Dask the rows to keep are found in a first pass:

1. each partition counts its rows per declared key (the row-wise map
   :func:`dpstats.groups.partition.group_codes`); the counts stay on the workers
   (persisted), where they are added into n_g, the one vector the client
   gets: it draws the noisy sizes m_g from it exactly as the pandas path
   does (same generator, same counts: the same sizes). Each partition gets
   the number of each group's rows in the partitions before it, a running
   sum of the counts on the workers, and keeps the rows that are among their
   group's first m_g (:func:`dpstats.groups.partition.chunk_codes`), building its
   design with the pandas front end (the formula, the declared bounds and
   levels, the row-wise imputation of bad cells, dpstats/frontend/cells.py).

Then, for the NoisyStats batch (``se_share=0``, an intercept, no factor with
more than one dummy: dpstats/mechanisms/noisystats/grouped.py), one more pass
computes every group's moments of the unit-scale rows
(:class:`dpstats.design.moments.GroupMoments`, added on the workers); the client
adds the pad rows (m_g - n_g copies of the row the front end makes of missing
cells: public metadata) and runs the batch's release on the moments
(:func:`~dpstats.mechanisms.noisystats.grouped.fit_moments`), the pandas
path's code from the statistics on.

Otherwise each group gets the ungrouped mechanism with its own spawned
generator, as on pandas, on a design whose rows are read only through
``Design.total``. The fits run on the client; a fit's sums are computed for
all groups at once: every group's fit is run until it asks for a sum not yet
computed, one pass over the partitions computes each group's asked sum over
its kept rows (plus its pad rows, on the client), and the fits are run again
from the start with the same generator state, now answered, until every fit
has finished; then each group's fit is run once more in group order, which
gives its release (the earlier runs' draws are discarded, never released).
As many passes as the mechanism reads sums (NoisyStats with standard errors:
two or three), each touching every partition once.

The same ``random_state`` thus gives the same sizes and, up to the order of
floating-point summation, the same release as pandas. Mechanisms that need
every row in one place are refused from the public inputs before any
partition is read, with the alternatives named.

``method="auto"`` chooses per group as on pandas (dpstats/groups/auto.py: the
rule at each group's public size, noisy or declared), among the mechanisms that
run here, and fits the groups of each choice together, group by group (the
NoisyStats batch where every group chose it). What it does not do on Dask:
release the data's spread first (dpstats/groups/spread.py reads the rows on
the client), so its ranking weighs every reference scenario; and take a
``target=`` (refused before anything is read: the pandas path refuses a call
whose public sizes leave no group within it before spending, which needs the
choice before the count).
"""

from __future__ import annotations

import copy
import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..design.matrix import CenteredUnitScale, Design, Statistic
from ..design.moments import GroupMoments
from ..frontend.formula import FormulaSpec, build_design
from ..groups.auto import GroupChoice, choose_per_group
from ..groups.fit import assemble, fit_choices, fit_one, per_group
from ..groups.grouped_results import DPGroupedResults
from ..groups.partition import GroupDeclaration, chunk_codes, group_budget, group_codes, sizes_of_counts
from ..mechanisms import MechanismSpec, PrivacyRequest
from ..mechanisms.base import Release
from ..mechanisms.noisystats import grouped as noisystats_grouped
from ..privacy import noise
from ..privacy.noise import RandomState, make_rng
from .dask_design import check_method, supported, tree_sum


def fit_by_group(
    estimator: str,
    formula: str,
    data: Any,
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
    q: float | None = None,
    target: float | None = None,
) -> DPGroupedResults:
    """One release per declared group (module docstring); public inputs were checked by the caller."""
    if spec is not None:
        check_method(spec, estimator)
    elif target is not None:
        raise ValueError("target= with a grouped method='auto' runs on a pandas DataFrame, not a Dask DataFrame")
    budget = group_budget(privacy, declaration, notion)
    count_rng, fit_rng = make_rng(random_state).spawn(2)
    meta = getattr(data, "_meta", None)
    if not isinstance(meta, pd.DataFrame):
        raise TypeError("data: a dask DataFrame is needed (not a dask Series or Array)")
    if declaration.by not in meta.columns:
        raise ValueError(f"by={declaration.by!r} is not a column of the data")
    build = functools.partial(_build, formula, bounds, levels, need_bounds)
    public, formula_spec = build(meta)
    if spec is not None:
        spec.check_design(public)
    rows = _KeptRows.of(data, build, declaration, budget.count_eps, count_rng)
    request = budget.request
    options = {} if q is None else {"q": q}
    if spec is None:
        allowed = frozenset(supported(estimator))
        choices = choose_per_group(public, rows.sizes, request, estimator, None, allowed=allowed)
        if len({c.key for c in choices}) > 1 or choices[0].spec is None:

            def fit_kind(choice: GroupChoice, groups: np.ndarray, kind_rng: np.random.Generator) -> list[Release]:
                hyper = {**choice.options, **options}
                return _group_by_group(choice.spec, public, rows, meta, request, kind_rng, hyper, groups)

            releases = fit_choices(choices, budget, public.n_columns, fit_rng, fit_kind)
            first = next((c for c in choices if c.spec is not None), choices[0])
            return assemble(
                declaration, budget, first.spec, first.options, first.reason, public, formula_spec, rows.sizes,
                releases, estimator, bounds, per_group=per_group(choices),
            )  # fmt: skip
        spec, hyper = choices[0].spec, choices[0].options
    if spec.name == "noisystats" and noisystats_grouped.supports(public, request):
        scale = CenteredUnitScale.from_design(public)
        moments = rows.total(functools.partial(_moments, scale, len(declaration.keys)))
        moments = moments + _pad_moments(scale, rows.pad_design(meta), rows.pads)
        releases = noisystats_grouped.fit_moments(public, moments, request, fit_rng, budget.changed_groups, **hyper)
    else:
        releases = _group_by_group(spec, public, rows, meta, request, fit_rng, {**hyper, **options})
    return assemble(
        declaration, budget, spec, hyper, None, public, formula_spec, rows.sizes, releases, estimator, bounds
    )


def _build(
    formula: str,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    need_bounds: bool,
    frame: pd.DataFrame,
) -> tuple[Design, FormulaSpec]:
    """The design of any number of rows by the pandas front end (bad cells imputed row-wise)."""
    return build_design(formula, frame, bounds, levels, need_bounds=need_bounds, missing="impute", min_rows=0)


@dataclass(frozen=True)
class _KeptRows:
    """The rows each group keeps, on the workers: the partitions, how to read them, and the public sizes."""

    partitions: list
    earlier: list  # per partition: each group's rows in the partitions before it (delayed, on the workers)
    build: Callable
    by: str
    keys: tuple
    sizes: np.ndarray
    pads: np.ndarray

    @classmethod
    def of(
        cls,
        data: Any,
        build: Callable,
        declaration: GroupDeclaration,
        count_eps: float | None,
        rng: np.random.Generator,
    ) -> _KeptRows:
        """The first pass (module docstring): counts per partition, kept on the workers; n_g and m_g here."""
        import dask

        by, keys = declaration.by, declaration.keys
        partitions = data.to_delayed()
        counts = dask.persist(*[dask.delayed(_counts)(part, by, keys) for part in partitions])
        total = tree_sum(list(counts))  # n_g: the per-partition counts stay on the workers
        sizes = sizes_of_counts(declaration, total, count_eps, rng)
        earlier = [np.zeros(len(keys), dtype=np.int64)]
        for part_counts in counts[:-1]:
            earlier.append(dask.delayed(operator.add)(earlier[-1], part_counts))
        return cls(partitions, earlier, build, by, keys, sizes, np.maximum(sizes - total, 0))

    def total(self, statistic: Callable[[Design, np.ndarray], Any]) -> Any:
        """``statistic(design, codes)`` of each partition's design (codes -1 on the rows no group keeps), added."""
        import dask

        sizes = dask.delayed(self.sizes, pure=True)  # one key in the graph, not a copy per partition
        apply = dask.delayed(_partition_statistic)
        return tree_sum(
            [
                apply(part, self.build, self.by, self.keys, before, sizes, statistic)
                for part, before in zip(self.partitions, self.earlier, strict=True)
            ]
        )

    def pad_design(self, meta: pd.DataFrame) -> Design:
        """The design of max(1, max(pads)) rows of missing cells (a group's pad rows are its first ``pads[g]``)."""
        missing = np.full(max(1, int(self.pads.max(initial=0))), -1)  # one at least, whether or not any group pads
        frame = pd.DataFrame({j: pd.api.extensions.take(meta.iloc[:, j].array, missing, allow_fill=True)
                              for j in range(meta.shape[1])}).set_axis(meta.columns, axis=1)  # fmt: skip
        return self.build(frame)[0]


def _counts(partition: pd.DataFrame, by: str, keys: tuple) -> np.ndarray:
    """One partition's rows per declared key (runs on a worker)."""
    codes = group_codes(partition[by], keys)
    return np.bincount(codes[codes >= 0], minlength=len(keys))


def _partition_statistic(
    partition: pd.DataFrame,
    build: Callable,
    by: str,
    keys: tuple,
    earlier: np.ndarray,
    sizes: np.ndarray,
    statistic: Callable[[Design, np.ndarray], Any],
) -> Any:
    """``statistic`` of one partition's design and its rows' group codes, -1 beyond each group's m_g (a worker)."""
    codes = chunk_codes(group_codes(partition[by], keys), earlier, sizes)
    design, _ = build(partition)
    return statistic(design, codes)


def _moments(scale: CenteredUnitScale, groups: int, design: Design, codes: np.ndarray) -> GroupMoments:
    return noisystats_grouped.unit_group_moments(scale, design, codes, groups)


def _pad_moments(scale: CenteredUnitScale, pad: Design, pads: np.ndarray) -> GroupMoments:
    """The moments of each group's ``pads[g]`` pad rows (all rows of ``pad`` are the same row)."""
    one = noisystats_grouped.unit_group_moments(scale, pad.subset(slice(0, 1)), np.zeros(1, dtype=np.int64), 1)
    mean = np.where((pads > 0)[:, None], one.mean, 0.0)
    return GroupMoments(pads, mean, np.zeros((pads.size, *one.comoment.shape[1:])))


class _Ask(Exception):
    """A group's fit asks for ``statistic`` of its rows, not yet computed."""

    def __init__(self, statistic: Statistic) -> None:
        super().__init__("a sum not yet computed")
        self.statistic = statistic


@dataclass
class _Answers:
    """A group's ``Design.chunks`` in one run: the k-th call gets the k-th sum computed so far, or asks."""

    sums: list

    def __call__(self, statistic: Statistic) -> Any:
        if not self.sums:
            raise _Ask(statistic)
        return self.sums.pop(0)


def _group_by_group(
    spec: MechanismSpec,
    public: Design,
    rows: _KeptRows,
    meta: pd.DataFrame,
    request: PrivacyRequest,
    rng: np.random.Generator,
    options: Mapping[str, object],
    groups: Sequence[int] | None = None,
) -> list[Release]:
    """The mechanism on each group's rows (of ``groups``; None: every group) with its own spawned generator, its
    sums computed for all of them at once."""
    groups = list(range(rows.sizes.size)) if groups is None else [int(g) for g in groups]
    rngs = dict(zip(groups, rng.spawn(len(groups)), strict=True))
    pad = rows.pad_design(meta)
    sums: dict[int, list] = {g: [] for g in groups}

    def design(g: int) -> Design:
        return replace(public, y=None, X=None, rows=int(rows.sizes[g]), chunks=_Answers(list(sums[g])))

    pending = list(groups)
    while pending:
        asks = {}
        for g in pending:
            try:
                with noise.discarded():  # a run to learn what the fit reads: its draws are never released
                    fit_one(spec, design(g), request, copy.deepcopy(rngs[g]), options)
            except _Ask as ask:
                asks[g] = ask.statistic
        if asks:
            found = rows.total(functools.partial(_group_sums, asks))
            for g, statistic in asks.items():
                parts = [statistic(pad.subset(slice(0, int(rows.pads[g]))))] if rows.pads[g] else []
                parts += [found[g]] if g in found else []
                sums[g].append(functools.reduce(operator.add, parts))
        pending = list(asks)
    return [fit_one(spec, design(g), request, rngs[g], options) for g in groups]


class _Sums(dict):
    """Per-group partial sums of a partition; ``+`` adds those of the same group."""

    def __add__(self, other: dict) -> _Sums:
        merged = _Sums(self)
        for g, value in other.items():
            merged[g] = merged[g] + value if g in merged else value
        return merged


def _group_sums(asks: Mapping[int, Statistic], design: Design, codes: np.ndarray) -> _Sums:
    """Each asking group's statistic of its kept rows of one partition (groups with no rows there left out)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    found = _Sums()
    for g, statistic in asks.items():
        start, stop = np.searchsorted(sorted_codes, [g, g + 1])
        if stop > start:
            found[g] = statistic(design.subset(order[start:stop]))
    return found
