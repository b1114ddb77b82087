"""Nothing data-dependent leaks outside the release (docs/DESIGN.md section 2).

A sentinel value planted in the data (a number far outside the bounds, a
string level, distinctive row labels) must appear in no error message, no
warning, no summary in any format, no repr, no to_dict / JSON and no pickle,
on successful fits, failed fits and error paths. The pickled result must hold
no array of length n and its size must not grow with n.
"""

import json
import pickle
import re
import struct
import warnings
from collections.abc import Mapping
from functools import partial

import numpy as np
import pandas as pd
import pytest

import dpstats

# The mechanism under test, whatever method="auto" picks in later versions.
dp_ols = partial(dpstats.dp_ols, method="noisystats")

SENTINEL = 987654.321
SENTINEL_LEVEL = "SENTINEL_LEVEL_XYZ"
ROW_LABEL = "ROWLABELQQ"
# every way a formatter could render the number
SENTINEL_FORMS = ["987654", "9.877e", "9.8765", "987,654", "9.88e+05", "987_654"]
BOUNDS = {"x": (0.0, 10.0), "z": (-5.0, 5.0), "y": (-20.0, 40.0)}
LEVELS = {"g": ["lo", "hi"]}


def assert_clean(text, where=""):
    """No sentinel form in ``text``, a number's form only where a number starts (not inside another's digits).

    A released float printed in full (the bootstrap replicates in the JSON) has
    16 digits, and "987654" occurs inside one such run by chance (about 7%
    of the time over a thousand replicates); a rendered sentinel starts after
    a non-digit.
    """
    text = str(text)
    for form in SENTINEL_FORMS:
        assert not re.search(r"(?<![\d.])" + re.escape(form), text), f"{form!r} leaked in {where}"
    for form in (SENTINEL_LEVEL, ROW_LABEL):
        assert form not in text, f"{form!r} leaked in {where}"


def make_frame(n=60, seed=0, labelled=True):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "z": rng.uniform(-5, 5, n),
            "g": rng.choice(["lo", "hi"], n),
            "unused_num": rng.normal(0, 1, n),
            "unused_str": rng.choice(["p", "q"], n),
        },
        index=[f"{ROW_LABEL}{i}" for i in range(n)] if labelled else None,
    )
    frame["y"] = 1 + frame.x - frame.z + rng.normal(0, 1, n)
    # the sentinels: out of bounds in a regressor, the response and an unused column
    frame.iloc[3, frame.columns.get_loc("x")] = SENTINEL
    frame.iloc[4, frame.columns.get_loc("y")] = -SENTINEL
    frame.iloc[5, frame.columns.get_loc("unused_num")] = SENTINEL
    frame.iloc[6, frame.columns.get_loc("unused_str")] = SENTINEL_LEVEL
    return frame


def fit_quietly(*args, **kwargs):
    """dp_ols, asserting that it emits no warning at all."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dp_ols(*args, **kwargs)
    assert caught == [], [str(w.message) for w in caught]
    return res


def assert_result_clean(res):
    summary = res.summary()
    outputs = {
        "text": summary.as_text(),
        "latex": summary.as_latex(),
        "markdown": summary.as_markdown(),
        "html": summary.as_html(),
        "str": str(res),
        "repr": repr(res),
        "repr_html": res._repr_html_(),
        "summary repr": repr(summary),
        "json": json.dumps(res.to_dict()),
        "tidy": res.tidy().to_string(),
        "glance": res.glance().to_string(),
        "privacy": repr(res.privacy),
        "noisy_stats": repr(res.noisy_stats),
    }
    for where, text in outputs.items():
        assert_clean(text, where)
    blob = pickle.dumps(res)
    assert b"987654" not in blob and SENTINEL_LEVEL.encode() not in blob and ROW_LABEL.encode() not in blob
    for value in (SENTINEL, -SENTINEL):
        assert struct.pack("<d", value) not in blob and struct.pack(">d", value) not in blob


# --------------------------------------------------------------------------
# Successful and failed fits
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "formula",
    ["y ~ x + z + g", "y ~ x * z", "y ~ x + z - 1", "y ~ I(x ** 2) + np.log1p(x) + C(g, levels=['lo', 'hi'])"],
)
def test_successful_fits_leak_nothing(formula):
    res = fit_quietly(formula, make_frame(), eps=500.0, bounds=BOUNDS, levels=LEVELS, random_state=0)
    assert not res.failed
    assert_result_clean(res)


def test_failed_fit_leaks_nothing():
    frame = make_frame(n=8)
    for seed in range(200):
        res = fit_quietly("y ~ x", frame, eps=0.05, bounds=BOUNDS, random_state=seed)
        if res.failed:
            break
    assert res.failed
    assert_result_clean(res)


def test_missing_midpoint_leaks_nothing():
    frame = make_frame()
    frame.iloc[7, frame.columns.get_loc("x")] = np.nan
    res = fit_quietly("y ~ x + z", frame, eps=20.0, bounds=BOUNDS, random_state=1)
    assert_result_clean(res)


# --------------------------------------------------------------------------
# Bad cells (row-wise by default, an error for the curator under missing="raise")
# and schema errors
# --------------------------------------------------------------------------


def _bad_cell_paths(labelled):
    def make_frame_(**kw):
        return make_frame(labelled=labelled, **kw)

    undeclared = make_frame_()
    undeclared.iloc[8, undeclared.columns.get_loc("g")] = SENTINEL_LEVEL
    nan_frame = make_frame_()
    nan_frame.iloc[9, nan_frame.columns.get_loc("z")] = np.nan
    numeric_levels = make_frame_().assign(k=np.resize([1.0, 2.0, 3.0], 60))
    numeric_levels.iloc[10, numeric_levels.columns.get_loc("k")] = SENTINEL
    domain = make_frame_().assign(w=np.linspace(1, 2, 60))
    domain.iloc[11, domain.columns.get_loc("w")] = -SENTINEL
    suffix = ", row labels" if labelled else ""
    paths = [
        ("undeclared level", "y ~ x + g", undeclared, {"levels": LEVELS}),
        ("undeclared level, formula levels", "y ~ x + C(g, levels=['lo', 'hi'])", undeclared, {}),
        ("NaN", "y ~ x + z", nan_frame, {}),
        ("numeric C() levels", "y ~ x + C(k, levels=[1.0, 2.0, 3.0])", numeric_levels, {}),
        ("transform out of domain", "y ~ np.log(w)", domain, {"bounds": {"y": (-20, 40), "np.log(w)": (0, 1)}}),
    ]
    return [(label + suffix, *rest) for label, *rest in paths]


def _schema_paths(labelled):
    frame = make_frame(labelled=labelled)
    numeric_levels = frame.assign(k=np.resize([1.0, 2.0, 3.0], 60))
    numeric_levels.iloc[10, numeric_levels.columns.get_loc("k")] = SENTINEL
    paths = [
        ("NaN, no bounds for midpoint", "y ~ x + unused_num", frame.assign(unused_num=np.nan), {}),
        ("numeric C() levels, mixed use", "y ~ k + C(k, levels=[1.0, 2.0, 3.0])", numeric_levels, {}),
        ("non-numeric without levels", "y ~ x + s", frame.assign(s=frame.unused_str), {}),
        ("bounds missing", "y ~ x + unused_num", frame, {}),
        ("cross-row formula", "y ~ I(x - x.mean())", frame, {"bounds": {**BOUNDS, "I(x - x.mean())": (-9, 9)}}),
    ]
    return [(label + (", row labels" if labelled else ""), *rest) for label, *rest in paths]


def _raise_quietly(formula, frame, kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises((ValueError, TypeError)) as info:
            dp_ols(formula, frame, **kwargs)
    assert caught == [], [str(w.message) for w in caught]
    return info.value


def assert_error_clean(error: BaseException, label: str) -> None:
    assert_clean(str(error), label)
    assert_clean(repr(error), label)
    assert error.__cause__ is None or "987654" not in str(error.__cause__)


@pytest.mark.parametrize(
    ("label", "formula", "frame", "extra"),
    _bad_cell_paths(labelled=False) + _bad_cell_paths(labelled=True),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_bad_cells_leak_nothing_by_default_nor_in_the_curators_error(label, formula, frame, extra):
    kwargs = {"eps": 1.0, "bounds": BOUNDS, "random_state": 0, **extra}
    assert_result_clean(fit_quietly(formula, frame, **kwargs))
    error = _raise_quietly(formula, frame, {**kwargs, "missing": "raise"})
    assert "curator" in str(error)
    assert_error_clean(error, label)


@pytest.mark.parametrize(
    ("label", "formula", "frame", "extra"),
    _schema_paths(labelled=False) + _schema_paths(labelled=True),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_schema_errors_leak_nothing(label, formula, frame, extra):
    kwargs = {"eps": 1.0, "bounds": BOUNDS, "random_state": 0, **extra}
    assert_error_clean(_raise_quietly(formula, frame, kwargs), label)


# --------------------------------------------------------------------------
# Pickles
# --------------------------------------------------------------------------


def _walk(obj, seen=None):
    """Yield every object reachable from ``obj`` through attributes and containers."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, (str, bytes, int, float, bool, type(None), np.generic)):
        return
    if isinstance(obj, (pd.Series, pd.DataFrame, pd.Index)):
        yield from _walk(obj.to_numpy(), seen)
        return
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            for item in obj.ravel():
                yield from _walk(item, seen)
        return
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _walk(key, seen)
            yield from _walk(value, seen)
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            yield from _walk(item, seen)
        return
    state = getattr(obj, "__dict__", None)
    if state is not None:
        yield from _walk(state, seen)
    for slot in getattr(type(obj), "__slots__", ()):
        if hasattr(obj, slot):
            yield from _walk(getattr(obj, slot), seen)


def _fit_n(n):
    rng = np.random.default_rng(n)
    frame = pd.DataFrame({"x": rng.uniform(0, 10, n), "z": rng.uniform(-5, 5, n), "g": rng.choice(["lo", "hi"], n)})
    frame["y"] = 1 + frame.x - frame.z + rng.normal(0, 1, n)
    res = dp_ols("y ~ x + z + g", frame, eps=50.0, bounds=BOUNDS, levels=LEVELS, random_state=0)
    assert not res.failed
    return res


def test_pickled_result_holds_no_array_of_length_n():
    n = 1237  # distinct from p = 4, p * p, p - 1 and every other size in the result
    res = pickle.loads(pickle.dumps(_fit_n(n)))
    assert res.nobs == n
    sizes = []
    for item in _walk(res):
        if isinstance(item, np.ndarray):
            sizes += [item.size, *item.shape]
        elif isinstance(item, (list, tuple, set, frozenset, Mapping, str, bytes)):
            sizes.append(len(item))
    assert sizes, "the walk found nothing"
    assert n not in sizes
    assert any(isinstance(item, np.ndarray) and item.shape == (4,) for item in _walk(res))  # it did see params


def test_pickle_size_does_not_grow_with_n():
    small, large = (len(pickle.dumps(_fit_n(n))) for n in (300, 30000))
    assert abs(large - small) <= 8, (small, large)  # at most the encoding of nobs
