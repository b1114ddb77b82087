"""dpstats/output/render.py: builtins and strict JSON for the command line and R."""

import json

import numpy as np
import pandas as pd

from dpstats.output.render import dumps, plain


def _is_builtin_tree(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_builtin_tree(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_builtin_tree(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


def test_plain_converts_numpy_and_pandas_values() -> None:
    value = {"a": np.float64(1.5), "b": np.arange(3), "c": (np.int32(2), None), 4: pd.NA, "e": np.bool_(True)}
    out = plain(value)
    assert out == {"a": 1.5, "b": [0, 1, 2], "c": [2, None], "4": None, "e": True}
    assert _is_builtin_tree(out)
    assert np.isnan(plain(np.float64("nan")))  # R keeps NaN: only JSON maps it to null


def test_dumps_is_strict_json() -> None:
    value = {"a": np.float64("nan"), "b": np.array([1.0, np.inf]), "c": (np.int64(2), None), 3: "x"}
    assert json.loads(dumps(value)) == {"a": None, "b": [1.0, None], "c": [2, None], "3": "x"}
