"""A grouped call on a Dask DataFrame: the groups' moments summed over the partitions, the noise drawn on the client.

The release is that of the pandas grouped call (dpstats/grouped_fit.py) with
the vectorised NoisyStats batch (dpstats/mechanisms/noisystats/grouped.py,
``se_share=0``): each declared group keeps its first m_g rows in data order
and is padded to m_g rows with rows of missing cells (dpstats/grouping.py).
On Dask that takes two passes over the partitions, in data order:

1. each partition counts its rows per declared key (the row-wise map
   :func:`dpstats.grouping.group_codes`); the counts stay on the workers
   (persisted), where they are added into n_g, the one vector the client
   gets: it draws the noisy sizes m_g from it exactly as the pandas path
   does (same generator, same counts: the same sizes). Each partition gets
   the number of each group's rows in the partitions before it, a running
   sum of the counts on the workers;
2. each partition builds its design with the pandas front end (the formula,
   the declared bounds and levels, the row-wise imputation of bad cells,
   dpstats/cells.py), keeps the rows that are among their group's first m_g
   (:func:`dpstats.grouping.chunk_codes`) and computes every group's moments
   of the unit-scale rows (:class:`dpstats.moments.GroupMoments`); the
   partial moments are added on the workers and one total per group reaches
   the client.

On the client the pad rows are added (m_g - n_g copies of the one row that
the front end makes of missing cells: public metadata) and the batch release
runs on the moments (:func:`~dpstats.mechanisms.noisystats.grouped.fit_moments`),
the code of the pandas path. The same ``random_state`` thus gives the same
sizes and, up to the order of floating-point summation, the same params.

Only ``method="noisystats"`` with ``se_share=0`` and a design the batch
supports (an intercept, no factor with more than one dummy) runs here;
everything else is refused from the public inputs before any partition is
read, with the alternatives named.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .design import CenteredUnitScale, Design
from .distributed import tree_sum
from .formula import FormulaSpec, build_design
from .grouping import GroupBudget, GroupDeclaration, chunk_codes, group_codes, sizes_of_counts
from .mechanisms import MechanismSpec
from .mechanisms.base import Release
from .mechanisms.noisystats import grouped as noisystats_grouped
from .mechanisms.noisystats import inference
from .moments import GroupMoments

ALTERNATIVES = (
    "use method='noisystats' with se_share=0 (its groups' statistics are sums over rows, computed on the workers), "
    "or .compute() the data into a pandas DataFrame if it fits in memory"
)


def check_method(spec: MechanismSpec | None, estimator: str, se_share: float | None) -> None:
    """Refuse, before any data are read, a grouped Dask call the batch cannot run."""
    if spec is None:
        raise ValueError(f"method='auto' is not available for a grouped fit on a dask DataFrame; {ALTERNATIVES}")
    if estimator != "ols" or spec.name != "noisystats":
        raise ValueError(
            f"method={spec.name!r} has no grouped fit on a dask DataFrame (it needs each group's rows in one "
            f"place); {ALTERNATIVES}"
        )
    if (inference.DEFAULT_SHARE if se_share is None else se_share) != 0:
        raise ValueError(
            "a grouped NoisyStats fit on a dask DataFrame releases no standard errors: pass se_share=0 "
            "(all of eps on the point), or .compute() the data into a pandas DataFrame for standard errors"
        )


def fit_groups(
    formula: str,
    data: Any,
    declaration: GroupDeclaration,
    budget: GroupBudget,
    count_rng: np.random.Generator,
    fit_rng: np.random.Generator,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    need_bounds: bool,
    spec: MechanismSpec,
) -> tuple[Design, FormulaSpec, np.ndarray, list[Release]]:
    """The public design, the groups' sizes and their releases (module docstring); the method was checked."""
    import dask

    meta = getattr(data, "_meta", None)
    if not isinstance(meta, pd.DataFrame):
        raise TypeError("data: a dask DataFrame is needed (not a dask Series or Array)")
    if declaration.by not in meta.columns:
        raise ValueError(f"by={declaration.by!r} is not a column of the data")
    build = functools.partial(_build, formula, bounds, levels, need_bounds)
    design, formula_spec = build(meta)
    spec.check_design(design)
    if not noisystats_grouped.supports(design, budget.request):
        raise ValueError(
            "a grouped fit on a dask DataFrame needs an intercept and no factor with more than one dummy "
            "(the vectorised NoisyStats batch); .compute() the data into a pandas DataFrame for this formula"
        )
    scale = CenteredUnitScale.from_design(design)
    keys, groups = declaration.keys, len(declaration.keys)
    partitions = data.to_delayed()
    counts = dask.persist(*[dask.delayed(_counts)(part, declaration.by, keys) for part in partitions])
    total = tree_sum(list(counts))  # n_g: the per-partition counts stay on the workers
    sizes = sizes_of_counts(declaration, total, budget.count_eps, count_rng)
    earlier = [np.zeros(groups, dtype=np.int64)]  # rows of each group in the partitions before, summed on the workers
    for part_counts in counts[:-1]:
        earlier.append(dask.delayed(operator.add)(earlier[-1], part_counts))
    shared = dask.delayed(sizes, pure=True)  # one key in the graph, not a copy per partition
    moments = tree_sum(
        [
            dask.delayed(_moments)(part, build, scale, declaration.by, keys, before, shared)
            for part, before in zip(partitions, earlier, strict=True)
        ]
    )
    moments = moments + _pads(build, scale, meta, np.maximum(sizes - total, 0))
    releases = noisystats_grouped.fit_moments(design, moments, budget.request, fit_rng, budget.changed_groups)
    return design, formula_spec, sizes, releases


def _build(
    formula: str,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    need_bounds: bool,
    frame: pd.DataFrame,
) -> tuple[Design, FormulaSpec]:
    """The design of any number of rows by the pandas front end (bad cells imputed row-wise)."""
    return build_design(formula, frame, bounds, levels, need_bounds=need_bounds, missing="impute", min_rows=0)


def _counts(partition: pd.DataFrame, by: str, keys: tuple) -> np.ndarray:
    """One partition's rows per declared key (runs on a worker)."""
    codes = group_codes(partition[by], keys)
    return np.bincount(codes[codes >= 0], minlength=len(keys))


def _moments(
    partition: pd.DataFrame,
    build: functools.partial,
    scale: CenteredUnitScale,
    by: str,
    keys: tuple,
    earlier: np.ndarray,
    sizes: np.ndarray,
) -> GroupMoments:
    """One partition's moments per group over the rows each group keeps (runs on a worker)."""
    codes = chunk_codes(group_codes(partition[by], keys), earlier, sizes)
    design, _ = build(partition)
    return noisystats_grouped.unit_group_moments(scale, design, codes, len(keys))


def _pads(build: functools.partial, scale: CenteredUnitScale, meta: pd.DataFrame, pads: np.ndarray) -> GroupMoments:
    """The moments of each group's pad rows: ``pads[g]`` copies of the row the front end makes of missing cells."""
    missing = np.array([-1])
    row = pd.DataFrame({j: pd.api.extensions.take(meta.iloc[:, j].array, missing, allow_fill=True)
                        for j in range(meta.shape[1])}).set_axis(meta.columns, axis=1)  # fmt: skip
    design, _ = build(row)
    one = noisystats_grouped.unit_group_moments(scale, design, np.zeros(1, dtype=np.int64), 1)
    groups = pads.size
    mean = np.where((pads > 0)[:, None], one.mean, 0.0)
    return GroupMoments(pads, mean, np.zeros((groups, *one.comoment.shape[1:])))
