"""The formula's variables on the scale the model uses them (the perturbed histogram's axes, Lei 2011).

A mechanism that bins variables (dpstats/mechanisms/histogram/) bins each one
on its declared bounds. A variable the formula uses only through one
increasing invertible function -- ``np.log(wage)``, ``np.sqrt(hours)``,
``np.log1p(spending)`` -- is binned on that function's scale instead: on
``[log 50, log 20000]`` a log wage is spread over the bins as the regression
sees it, where equal bins of the wage itself put nearly every worker in the
first one and leave ``np.log(wage)`` constant (a CPS extract's education
coefficient was 0.0001 against OLS's 0.084 at eps = 1e9). Which variables
qualify is decided on the syntax tree of the formula's factors, from public
facts only; the transformed value of a clipped row lies inside the
transformed bounds (the functions are increasing), so a row still moves one
count, and the histogram's sensitivity is unchanged.

:class:`ModelScale` is the public map between the two scales: the
:class:`~dpstats.design.matrix.Variables` of a design hold the transformed
columns and bounds, and their ``encode`` map inverts the function before
evaluating the formula at a cell's centre.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design.bounds import ROWWISE_FUNCTIONS, Interval, function_name

INVERSES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log": np.exp,
    "log2": np.exp2,
    "log10": lambda v: np.power(10.0, v),
    "log1p": np.expm1,
    "sqrt": np.square,
    "exp": np.log,
    "expm1": np.log1p,
}
"""The increasing functions of the formula language whose inverse is known, with that inverse."""


def _occurrences(code: str, names: set[str]) -> dict[str, set[str | None]]:
    """For each of ``names`` in the factor ``code``: the function each occurrence is the single argument of
    (None for any other use)."""
    found: dict[str, set[str | None]] = {}
    tree = ast.parse(code, mode="eval")
    wrapped: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            name = function_name(node.func)
            if name in INVERSES and isinstance(node.args[0], ast.Name):
                wrapped[id(node.args[0])] = name
    callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names and id(node) not in callees:
            found.setdefault(node.id, set()).add(wrapped.get(id(node)))
    return found


def model_scale_functions(codes: Iterable[str], numeric: Iterable[str]) -> dict[str, str]:
    """The numeric variables every occurrence of which, over the factors' ``codes``, is the single argument of
    one and the same function of :data:`INVERSES`, with that function's name."""
    names = set(numeric)
    uses: dict[str, set[str | None]] = {}
    for code in codes:
        for name, functions in _occurrences(code, names).items():
            uses.setdefault(name, set()).update(functions)
    return {name: next(iter(fs)) for name, fs in uses.items() if len(fs) == 1 and None not in fs}


@dataclass(frozen=True)
class ModelScale:
    """Which variables are laid out on a function's scale (``functions``: variable -> function name)."""

    functions: Mapping[str, str]

    def bounds(self, declared: Mapping[str, Interval]) -> dict[str, Interval]:
        """The declared bounds, those of the transformed variables mapped by their (increasing) function."""
        out = dict(declared)
        for name, function in self.functions.items():
            lo, hi = declared[name]
            out[name] = tuple(float(v) for v in ROWWISE_FUNCTIONS[function].ufunc(np.array([lo, hi])))
        return out

    def forward(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The variables' columns on the model's scale (a row-wise map of the clipped values)."""
        out = frame.copy()
        for name, function in self.functions.items():
            out[name] = ROWWISE_FUNCTIONS[function].ufunc(frame[name].to_numpy(dtype=float))
        return out

    def inverse(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Rows on the model's scale (cell centres, say) back on the variables' own scale."""
        out = rows.copy()
        for name, function in self.functions.items():
            if name in out:
                out[name] = INVERSES[function](out[name].to_numpy(dtype=float))
        return out


def response_axis(lhs_code: str, response: Sequence[str], scale: ModelScale) -> str | None:
    """The variable whose axis is the response itself (``y`` or ``np.log(y)`` on its log axis), else None."""
    if len(response) != 1:
        return None
    name = response[0]
    node = ast.parse(lhs_code, mode="eval").body
    if isinstance(node, ast.Name) and node.id == name and name not in scale.functions:
        return name
    wrapped = isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Name)
    if wrapped and node.args[0].id == name and function_name(node.func) == scale.functions.get(name):
        return name
    return None
