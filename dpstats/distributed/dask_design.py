"""Fits on a Dask DataFrame: sufficient statistics on the workers, the noise added once on the client.

``dp_ols`` and ``dp_quantreg`` accept a ``dask.dataframe.DataFrame`` (the
optional extra ``pip install "dpstats[dask]"``) for the mechanisms whose
release is a function of sums over rows (``MechanismSpec.distributed``):
NoisyStats (least squares), the perturbed histogram (least squares and
quantile regression) and KNG least squares. Such a mechanism reads its rows
only through ``Design.total(statistic)`` (dpstats/design/moments.py). Here the
design's ``chunks`` apply ``statistic`` to each partition on the workers,
after the same front end as for pandas (the formula, a whitelist of row-wise
maps, dpstats/frontend/grammar.py; the declared bounds and levels; clipping and
the row-wise imputation of bad cells, dpstats/frontend/cells.py): a row's treatment
depends on that row alone, so building the design per partition gives the
rows of the design of the whole. The partial sums are added on the workers
(a binary tree of ``dask.delayed`` additions) and only their total reaches
the client, where the mechanism adds its noise once: the code from the sums
to the release is the pandas path's, so the same ``random_state`` gives the
same release up to the order of floating-point summation.

Privacy is that of the pandas call, with the same contract: n is public
(replace-one neighbours, docs/DESIGN.md section 2), counted as ``len`` of the
DataFrame, and the error for fewer than 2 rows is the pandas path's. A
mechanism may read the rows several times (NoisyStats' standard errors need
the residual meat at the released estimate: a second pass over the data),
each time for a sum at public, already released values.

With ``unit=`` and ``max_rows=`` (the privacy unit, docs/DESIGN.md section 2) the
rows are first shuffled on the workers so that each unit's rows share a
partition, and bounded there to ``max_rows`` per unit by priorities drawn
from the call's generator (dpstats/distributed/dask_units.py, which holds the
argument); n is then the kept rows (counted first, public), and each
partition's design carries its rows' units, which NoisyStats' meat summed by
unit and Tukey's deal of whole units read.

Tukey depth (least squares; Amin et al. 2023) runs here by name: its batches
are dealt row by row, by the partition's index and the row's position in it,
and each partition sums its rows' normal equations batch by batch
(dpstats/mechanisms/tukey/dealt.py, whose statistic is the one that reads the
partition's index); the batch fits are not jackknifed there. auto does not
choose it on Dask, and grouped fits refuse it (:data:`DEALT`).

Mechanisms that need every row in one place (Theil-Sen's pairs, the gradient
methods' passes, KNG quantile regression's chain, Tukey's quantile and binary
fits) are refused before any data are read, with the alternatives named.
``method="auto"`` chooses among the mechanisms whose statistics are sums
(:func:`supported`), by the same error model and refusal rule as on pandas,
once the rows are counted (n is public). Grouped calls (``by=``) on a dask
DataFrame are in dpstats/distributed/by_group.py, where auto chooses per group.

A pass over the partitions that runs longer than a few seconds shows a tqdm
progress bar on a terminal (:func:`tree_sum`).
"""

from __future__ import annotations

import contextlib
import functools
import operator
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..design.matrix import Design, Statistic
from ..design.units import Units
from ..frontend.formula import FormulaSpec, build_design
from ..groups.fit import PROGRESS_SECONDS
from ..mechanisms import REGISTRY, MechanismSpec
from ..privacy import noise
from . import dask_units


def is_dask(data: object) -> bool:
    """Whether ``data`` is a Dask collection (without importing dask)."""
    return type(data).__module__.split(".")[0] in ("dask", "dask_expr")


DEALT = frozenset({"tukey"})
"""The mechanisms whose statistic on a Dask DataFrame deals the rows to batches by their positions in their
partitions (:class:`~dpstats.mechanisms.tukey.dealt.DealtEquations`): one fit, by name. auto does not choose
them there (its error model is calibrated on the pandas path's jackknifed batches) and grouped fits do not run
them (by_group.py computes its sums over each group's kept rows, not at positions)."""


def supported(estimator: str, grouped: bool = True) -> list[str]:
    """The mechanisms that fit ``estimator`` on a Dask DataFrame: those auto chooses among and a grouped fit
    runs, and with ``grouped=False`` those that run for one fit by name (:data:`DEALT`)."""
    return [
        name for name, spec in REGISTRY.items() if estimator in spec.distributed and not (grouped and name in DEALT)
    ]


def check_method(spec: MechanismSpec, estimator: str, grouped: bool = True) -> None:
    """Refuse, before any data are read, a method that needs every row in one place (or, in a grouped fit, one
    of :data:`DEALT`)."""
    names = ", ".join(repr(name) for name in supported(estimator, grouped))
    if spec.name not in supported(estimator, grouped):
        raise ValueError(
            f"method={spec.name!r} needs every row in one place and does not run on a dask DataFrame; "
            f"use method= one of {names}, or .compute() the data into a pandas DataFrame if it fits in memory"
        )


def dask_design(
    formula: str,
    data: Any,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    spec: MechanismSpec | None,
    estimator: str,
    need_bounds: bool,
    missing: str,
    unit: tuple[str, int] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[Design, FormulaSpec]:
    """The design of ``formula`` on a Dask DataFrame: public metadata here, the rows on the workers.

    The formula is checked and the design's columns, bounds and blocks built
    on the DataFrame's empty ``_meta`` (its column names and dtypes); n is
    the number of rows (public); ``chunks`` sums a statistic over the partitions.
    With ``unit`` (the privacy unit's column and max_rows) the rows are those its
    units keep, bounded with a key drawn from ``rng`` (dpstats/distributed/dask_units.py),
    n the kept rows and the design's ``units`` their number.
    """
    if spec is not None:  # auto chooses among the mechanisms that run here (dpstats/api/estimators.py)
        check_method(spec, estimator, grouped=False)
    if not isinstance(getattr(data, "_meta", None), pd.DataFrame):
        raise TypeError("data: a dask DataFrame is needed (not a dask Series or Array)")
    if unit is not None:
        dask_units.check_columns(data, unit[0])
    build = functools.partial(_partition_design, formula, bounds, levels, need_bounds, missing)
    public, formula_spec = build(data._meta)
    if unit is None:
        n, units = len(data), None
    else:
        data, n, units = _bounded(data, unit, rng)
        build = functools.partial(dask_units.with_units, build, *unit)
    if n < 2:
        raise ValueError("data must have at least 2 rows")
    design = replace(public, y=None, X=None, rows=n, units=units, chunks=functools.partial(_total, data, build))
    return design, formula_spec


def _bounded(data: Any, unit: tuple[str, int], rng: np.random.Generator) -> tuple[Any, int, Units]:
    """The frame of the rows the units keep (lazy), its number of rows and its units, counted on the workers."""
    import dask

    name, max_rows = unit
    frame = dask_units.bounded(data, name, max_rows, noise.stream_key(rng))
    rows, count = tree_sum([dask.delayed(dask_units.counts)(part) for part in frame.to_delayed()])
    return frame, int(rows), dask_units.client_units(name, int(count), max_rows)


def _partition_design(
    formula: str,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    need_bounds: bool,
    missing: str,
    partition: pd.DataFrame,
) -> tuple[Design, FormulaSpec]:
    """The design of one partition (any number of rows), by the pandas front end."""
    return build_design(formula, partition, bounds, levels, need_bounds=need_bounds, missing=missing, min_rows=0)


def _partition_total(partition: pd.DataFrame, index: int, build: Callable, statistic: Statistic) -> Any:
    """``statistic`` of one partition's design (runs on a worker); a dealt statistic also reads the partition's
    ``index`` (its rows' batches are dealt by position, dpstats/mechanisms/tukey/dealt.py)."""
    from ..mechanisms.tukey.dealt import DealtEquations  # imported where used: the family stays lazy

    design, _ = build(partition)
    if isinstance(statistic, DealtEquations):
        return statistic.chunk(design, index)
    return statistic(design)


def _total(data: Any, build: Callable, statistic: Statistic) -> Any:
    """``statistic`` added over the partitions of ``data``: partial sums on the workers, one total returned."""
    import dask

    apply = dask.delayed(_partition_total)
    return tree_sum([apply(part, index, build, statistic) for index, part in enumerate(data.to_delayed())])


def tree_sum(parts: list[Any]) -> Any:
    """The sum of delayed partial results, added on the workers in a binary tree; only the total is returned.

    A pass that runs longer than :data:`~dpstats.groups.fit.PROGRESS_SECONDS` shows a tqdm bar (where tqdm is
    installed) on a terminal, none when the output is not one (as in tests): the partitions done on a
    distributed cluster, the tasks done on a local scheduler. It shows how far the pass has come, nothing of
    the data.
    """
    import dask
    from dask.base import get_scheduler

    client = getattr(get_scheduler(), "__self__", None)
    distributed = sys.modules.get("distributed")
    if distributed is None or not isinstance(client, distributed.Client):
        with _task_progress():
            return dask.compute(_tree(parts, dask.delayed(operator.add)))[0]
    futures = client.compute(parts)
    total = _tree(futures, functools.partial(client.submit, operator.add))
    for _ in _progress(distributed.as_completed(futures, loop=client.loop), len(futures)):
        pass
    return total.result()


def _progress(done: Iterable[Any], total: int) -> Iterable[Any]:
    """``done`` with a tqdm bar over ``total`` partitions (module :func:`tree_sum`); itself without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return done
    return tqdm(done, total=total, desc="partitions", unit="partition", delay=PROGRESS_SECONDS, disable=None)


def _task_progress() -> contextlib.AbstractContextManager:
    """A dask callback with a tqdm bar over a local scheduler's tasks (:func:`tree_sum`); nothing without tqdm."""
    try:
        from tqdm.dask import TqdmCallback
    except ImportError:
        return contextlib.nullcontext()
    return TqdmCallback(desc="dask tasks", delay=PROGRESS_SECONDS, disable=None)


def _tree(parts: list[Any], add: Callable[[Any, Any], Any]) -> Any:
    """``parts`` added pairwise by ``add`` (delayed or submitted: on the workers) in a binary tree."""
    while len(parts) > 1:
        pairs = [add(a, b) for a, b in zip(parts[::2], parts[1::2], strict=False)]
        parts = pairs + parts[2 * len(pairs) :]
    return parts[0]
