"""The calibrated tables the error model reads, as grids: the synthetic reference families
(error_table.json, written by benchmarks/calibrate_error_model.py) and the real designs (real_table.json,
written by benchmarks/calibrate_real_designs.py).

A grid holds one candidate's cells of one family on (log n, log eps, log d or log L) with, per cell, each
reference scenario's log deviation (``dev``, ``rel``, ``tail``) and failure rate. A real design is a
family of its own: its third axis has one point and its one scenario is the design's data (resampled), so it
has no noise level or fill of its own to match a released spread against, and it records ``worst``, the
largest relative error of a coefficient the data determine well (benchmarks/calibrate_real_designs.py).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources

import numpy as np

CAP = 1e6
"""Errors of cells with no successful fit, for interpolation (they then dominate any mean)."""

SKEWED_VARIANCE = 4.0 / 150.0
"""The variance of the skewed scenario's Beta(1, 4) regressors (benchmarks/calibrate_error_model.py)."""


@dataclass(frozen=True)
class Grid:
    """One candidate's calibrated cells of one family on the (log n, log eps, log d or log L) grid."""

    axes: tuple[np.ndarray, np.ndarray, np.ndarray]
    dev: np.ndarray  # (n, eps, d or L, scenario), log
    rel: np.ndarray
    failure: np.ndarray  # as dev, each scenario's failure rate (not logged)
    refused: np.ndarray  # (n, eps, d or L), bool; cells the calibration did not simulate count as refused
    tail: np.ndarray  # as dev, NaN in the cells calibrated before the tail was recorded
    noise: tuple[float, ...]  # each scenario's noise level (sd_e, unit scale)
    fill: tuple[float, ...]  # each scenario's regressor variance (var_x, unit scale)
    worst: np.ndarray  # as dev: a real design's worst relative error of a strong slope; NaN in synthetic cells


def _grid(cells: list[dict], shape_key: str) -> Grid:
    """The grid of one candidate's cells of one family (``shape_key``: "d" or "levels")."""
    ns, es, ds = (sorted({c[k] for c in cells}) for k in ("n", "eps", shape_key))
    shape = (len(ns), len(es), len(ds))
    scen = max(len(c["scenarios"]) for c in cells)
    dev, rel = np.full((*shape, scen), math.log(CAP)), np.full((*shape, scen), math.log(CAP))
    tail = np.full((*shape, scen), math.log(CAP))  # NaN where a simulated cell records no tail
    worst = np.full((*shape, scen), math.log(CAP))  # NaN where a simulated cell records none
    failure, refused = np.ones((*shape, scen)), np.ones(shape, dtype=bool)
    simulated = [c for c in cells if not c["refused"]]
    for c in cells:
        at = (ns.index(c["n"]), es.index(c["eps"]), ds.index(c[shape_key]))
        refused[at] = c["refused"]
        if c["refused"]:
            continue
        dev[at] = [_log(s["dev"]) for s in c["scenarios"]]
        rel[at] = [_log(s["rel"]) for s in c["scenarios"]]
        tail[at] = [_log(s["tail"]) if "tail" in s else math.nan for s in c["scenarios"]]
        worst[at] = [_log(s["worst"]) if "worst" in s else math.nan for s in c["scenarios"]]
        failure[at] = [s["failure"] for s in c["scenarios"]]
    scenarios = [s for s in (simulated[0]["scenarios"] if simulated else []) if "sd_e" in s]
    noise = tuple(float(s["sd_e"]) for s in scenarios)
    fill = tuple(SKEWED_VARIANCE if s["var_x"] == "skewed" else float(s["var_x"]) for s in scenarios)
    return Grid((np.log(ns), np.log(es), np.log(ds)), dev, rel, failure, refused, tail, noise, fill, worst)


def _log(value: float) -> float:
    """The log of a recorded error, within [1e-12, CAP] (an infinite tail: no fit answered)."""
    return math.log(min(max(value, 1e-12), CAP))


@functools.lru_cache(maxsize=1)
def synthetic_grids() -> dict[tuple[str, str], Grid]:
    """The grids by (candidate label, family): "continuous" (cells without ``levels``) or "categorical"."""
    raw = _read("error_table.json")
    grids: dict[tuple[str, str], Grid] = {}
    for family, shape_key in (("continuous", "d"), ("categorical", "levels")):
        cells = [c for c in raw["cells"] if ("levels" in c) == (family == "categorical")]
        for label in dict.fromkeys(c["candidate"] for c in cells):
            grids[label, family] = _grid([c for c in cells if c["candidate"] == label], shape_key)
    return grids


@functools.lru_cache(maxsize=1)
def real_grids() -> dict[tuple[str, str], Grid]:
    """The real designs' grids by (candidate label, design signature): one scenario, the design's own data."""
    raw = _read("real_table.json")
    grids: dict[tuple[str, str], Grid] = {}
    for signature, design in raw["designs"].items():
        cells = [_as_scenario(c) for c in design["cells"]]
        for label in dict.fromkeys(c["candidate"] for c in cells):
            grids[label, signature] = _grid([c for c in cells if c["candidate"] == label], "d")
    return grids


def _as_scenario(cell: dict) -> dict:
    """A real cell in the synthetic cells' layout: one point on the third axis, its data the one scenario."""
    keys = ("dev", "rel", "tail", "failure", "worst")
    scenarios = [] if cell["refused"] else [{k: cell[k] for k in keys}]
    return {"candidate": cell["candidate"], "n": cell["n"], "eps": cell["eps"], "d": 1,
            "refused": cell["refused"], "scenarios": scenarios}  # fmt: skip


def _read(name: str) -> dict:
    return json.loads(resources.files(__package__).joinpath(name).read_text())
