"""Shared pieces of the fuzz battery (tests/test_fuzz_*.py): data with corrupted rows, outcomes, sentinels.

A *neighbour pair* is two data frames with the same n that differ in one row
(docs/DESIGN.md section 2); the replaced row may hold any bad cell. An
*outcome* is what a caller can observe of a call: its result's public
values, or the type and message of the exception it raised.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from hypothesis import strategies as st

SENTINEL = 987654.321
SENTINEL_TEXT = "SENTINEL_QZX"
MESSAGE_FORMS = ("987654", "9.8765", "9.877e", SENTINEL_TEXT)
"""Any rendering of the sentinels, searched in messages and warnings."""
RESULT_FORMS = ("987654.3", "9.876543", SENTINEL_TEXT)
"""Renderings specific enough not to occur by chance in a result's many noisy digits."""
BOUNDS = {"x": (0.0, 1.0), "z": (-1.0, 1.0), "w": (1.0, 4.0), "y": (-2.0, 3.0)}
LEVELS = {"g": ["a", "b", "c"]}

GOOD = {
    "x": st.floats(0.0, 1.0),
    "z": st.floats(-1.0, 1.0),
    "w": st.floats(1.0, 4.0),
    "y": st.floats(-2.0, 3.0),
    "g": st.sampled_from(LEVELS["g"]),
}


BAD_NUMBERS = [math.nan, math.inf, -math.inf, 1e300, -1e300, 0.0, -5.0, SENTINEL, -SENTINEL, None, "n/a", SENTINEL_TEXT]
BAD_LEVELS = [None, math.nan, SENTINEL_TEXT, "", 1, SENTINEL]


def _good(column: str, rng: np.random.Generator) -> object:
    if column == "g":
        return LEVELS["g"][int(rng.integers(3))]
    lo, hi = BOUNDS[column]
    return float(rng.uniform(lo, hi))


def _bad(column: str, rng: np.random.Generator) -> object:
    pool = BAD_LEVELS if column == "g" else BAD_NUMBERS
    return pool[int(rng.integers(len(pool)))]


@st.composite
def replaced_row(draw, columns: tuple[str, ...]):
    """The row that differs: each cell valid or any bad value, drawn by hypothesis (so failures shrink to it)."""
    out = {}
    for c in columns:
        bad = BAD_LEVELS if c == "g" else BAD_NUMBERS
        out[c] = draw(st.one_of(st.sampled_from(bad), GOOD[c]))
    return out


@st.composite
def neighbour_pair(draw, columns: tuple[str, ...] = ("y", "x", "z", "w", "g"), min_n: int = 2, max_n: int = 30):
    """Two frames with the same n that differ in their row ``i``.

    The shared rows come from a seeded generator (fast to build; hypothesis
    draws the seed): valid values with a few bad cells, or all rows equal.
    The replaced row is drawn cell by cell from valid and bad values.
    """
    n = draw(st.integers(min_n, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 3)) == 0:  # all-equal data: no variation at all
        first = {c: _good(c, rng) for c in columns}
        rows = [dict(first) for _ in range(n)]
    else:
        rows = [{c: (_bad(c, rng) if rng.random() < 0.05 else _good(c, rng)) for c in columns} for _ in range(n)]
    i = draw(st.integers(0, n - 1))
    replaced = draw(replaced_row(columns))
    frame = pd.DataFrame(rows, columns=list(columns)).astype(object)
    other = frame.copy()
    for c in columns:
        other.at[i, c] = replaced[c]
    return frame, other


@dataclass(frozen=True)
class Outcome:
    """What a caller observes: a result's public values, or the exception's type and message."""

    raised: str | None
    message: str
    shape: tuple[int, ...] | None
    failed: bool | None
    texts: tuple[str, ...]
    warnings: tuple[str, ...]

    def leaked(self) -> list[str]:
        """Sentinel renderings found in the message, the warnings or the result's texts."""
        found = [f for f in MESSAGE_FORMS for text in (self.message, *self.warnings) if f in text]
        return found + [f for f in RESULT_FORMS for text in self.texts if f in text]

    def observable(self) -> tuple:
        """What must agree on neighbouring data: everything but the (noisy) values themselves."""
        return (self.raised, self.message, self.shape, self.warnings)


def outcome(call: Callable[[], object]) -> tuple[Outcome, object]:
    """Run ``call`` and record its outcome; warnings are recorded, not raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = call()
        except Exception as exc:  # the outcome of interest, whatever its type
            return Outcome(type(exc).__name__, str(exc), None, None, (), _messages(caught)), None
    params = np.asarray(res.params, dtype=float)
    # Bootstrap replicates (thousands of random floats, post-processing of the release) are left out of the
    # dict's text: a 7-digit sentinel form turns up among their digits by chance (p ~ 1 over the battery).
    record = {k: v for k, v in res.to_dict().items() if k != "replicates"}
    texts = (res.summary().as_text(), res.tidy().to_string(), str(record))
    return Outcome(None, "", params.shape, bool(res.failed), texts, _messages(caught)), res


def _messages(caught) -> tuple[str, ...]:
    return tuple(str(w.message) for w in caught)


def assert_no_sentinel(result: Outcome) -> None:
    assert not result.leaked(), (result.leaked(), result.message, result.texts)


def assert_finite_or_failed(res) -> None:
    if res is None:
        return
    params = np.asarray(res.params, dtype=float)
    if res.failed:
        assert np.isnan(params).all() and res.reason
    else:
        assert np.isfinite(params).all(), params
