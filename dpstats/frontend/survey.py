"""A call's survey declaration: ``weights=``, ``cluster=`` and ``strata=`` (public facts, checked before reading).

* ``weights`` names the survey-weight column; its range is declared in ``bounds``
  (dpstats/frontend/weights.py).
* ``cluster`` names the PSU column and ``strata`` the stratum column; the levels of
  both are declared in ``levels`` like a categorical variable's, and a PSU is a pair
  (stratum, cluster) (dpstats/design/survey.py). The cluster's levels are either its
  codes, crossed with every stratum (every stratum has a PSU of every code), or the
  design's PSUs themselves as (stratum, cluster) pairs (``levels={"psu": [(1, 1), (1, 2),
  (2, 1), ...]}``, a survey's published list), which a design whose strata have
  different numbers of PSUs needs: a declared PSU without rows still counts as one of
  its stratum's (its total is 0), so crossing codes that some strata lack understates
  the spread of the others'. A row whose cluster or stratum is missing or not declared
  is put in the first declared level, or the first declared PSU (the categorical cells'
  treatment, dpstats/frontend/cells.py): no row can make the call raise.

A design needs its weights: ``cluster=`` without ``weights=`` is refused (pass a
column of ones, declared in ``(0, 1)``, for an unweighted clustered fit).
``strata=`` without ``cluster=`` makes the rows the PSUs within the strata
(``svydesign(ids = ~1, strata = ~st)``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design.survey import PSUs
from .cells import CURATOR_ONLY, categorical_cells


@dataclass(frozen=True)
class SurveyDeclaration:
    """The columns a call declared: the weights, and the PSUs and strata (None: not declared)."""

    weights: str
    cluster: str | None = None
    strata: str | None = None


def declare_survey(weights: object, cluster: object = None, strata: object = None) -> SurveyDeclaration | None:
    """Check the declaration's types and combination (public; module docstring); None without weights."""
    for name, value in (("weights", weights), ("cluster", cluster), ("strata", strata)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must name a column of the data, as in {name}='{name[:2]}'")
    if weights is None:
        if cluster is not None or strata is not None:
            raise ValueError("cluster= and strata= declare a survey design: pass its weights= too")
        return None
    if strata is not None and strata == weights:
        raise ValueError("weights and strata must be different columns")
    if cluster is not None and cluster in (weights, strata):
        raise ValueError("weights, cluster and strata must be different columns")
    return SurveyDeclaration(weights, cluster, strata)


def check_psu_levels(
    declaration: SurveyDeclaration, columns: Collection[str], levels: Mapping[str, object] | None
) -> None:
    """The cluster and strata columns exist and have declared levels (schema facts and declarations only)."""
    for name in (declaration.cluster, declaration.strata):
        if name is None:
            continue
        if name not in columns:
            raise ValueError(f"{name!r} is not a column of the data")
        if levels is None or name not in levels:
            raise ValueError(f"the survey design's column {name!r} needs its levels declared in levels=")
    pairs = declared_pairs(declaration, levels or {})
    if pairs is not None:
        strata = set(levels[declaration.strata])
        if any(stratum not in strata for stratum, _ in pairs):
            raise ValueError(
                f"every declared PSU (stratum, cluster) needs its stratum among levels[{declaration.strata!r}]"
            )


def declared_pairs(declaration: SurveyDeclaration, levels: Mapping[str, object]) -> tuple[tuple, ...] | None:
    """The declared PSUs when the cluster's levels are (stratum, cluster) pairs (module docstring), else None."""
    if declaration.cluster is None or declaration.strata is None:
        return None
    clusters = levels.get(declaration.cluster, ())
    if all(isinstance(c, tuple) and len(c) == 2 for c in clusters):
        return tuple(clusters)
    return None


def psus(declaration: SurveyDeclaration, data: pd.DataFrame, levels: Mapping[str, tuple], missing: str) -> PSUs | None:
    """Every row's PSU among the declared (stratum, cluster) pairs; with ``strata=`` alone every row's stratum
    (the rows are the PSUs); None without either."""
    if declaration.cluster is None:
        if declaration.strata is None:
            return None
        strata = tuple(levels[declaration.strata])
        codes = _codes(declaration.strata, data, strata, missing)
        return PSUs(codes, np.arange(len(strata), dtype=np.intp), None, declaration.strata)
    pairs = declared_pairs(declaration, levels)
    if pairs is not None:
        return _nested(declaration, data, pairs, tuple(levels[declaration.strata]), missing)
    clusters = tuple(levels[declaration.cluster])
    cluster = _codes(declaration.cluster, data, clusters, missing)
    if declaration.strata is None:
        return PSUs(cluster, np.zeros(len(clusters), dtype=np.intp), declaration.cluster)
    strata = tuple(levels[declaration.strata])
    codes = _codes(declaration.strata, data, strata, missing) * len(clusters) + cluster
    of_psu = np.repeat(np.arange(len(strata), dtype=np.intp), len(clusters))
    return PSUs(codes, of_psu, declaration.cluster, declaration.strata)


def _codes(name: str, data: pd.DataFrame, levels: tuple, missing: str) -> np.ndarray:
    """Every row's position among the column's declared levels (bad cells: the first level)."""
    return np.asarray(categorical_cells(name, data[name].reset_index(drop=True), levels, missing).codes, dtype=np.intp)


def _nested(
    declaration: SurveyDeclaration, data: pd.DataFrame, pairs: tuple[tuple, ...], strata: tuple, missing: str
) -> PSUs:
    """Every row's PSU among the declared (stratum, cluster) ``pairs``; an undeclared pair is the first PSU."""
    position = {pair: k for k, pair in enumerate(pairs)}
    strata_cells = data[declaration.strata].to_numpy(dtype=object)
    rows = zip(strata_cells, data[declaration.cluster].to_numpy(dtype=object), strict=True)
    codes = np.fromiter((_position(position, pair) for pair in rows), dtype=np.intp, count=len(data))
    if missing == "raise" and (codes < 0).any():
        raise ValueError(f"a row's (stratum, cluster) pair is not among the declared PSUs. {CURATOR_ONLY}")
    stratum = {level: h for h, level in enumerate(strata)}
    of_psu = np.array([stratum[s] for s, _ in pairs], dtype=np.intp)
    return PSUs(np.maximum(codes, 0), of_psu, declaration.cluster, declaration.strata)


def _position(position: Mapping[tuple, int], pair: tuple) -> int:
    """The pair's position among the declared PSUs, -1 where it is not one (an unhashable cell included)."""
    try:
        return position.get(pair, -1)
    except TypeError:
        return -1
