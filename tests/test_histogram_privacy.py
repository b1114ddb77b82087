"""Privacy audit of the perturbed histogram (Lei 2011, section 2.2 and Lemma 2).

docs/PRIVACY_TESTING.md, "An audit that fits in CI", with the shared harness in
dpstats/audit:

1. Replay (deterministic): on the 48 corner neighbours of [0, 1]^2 (the 12
   over the lowest corner for the layouts and fits other than OPTIONS' two
   bins and least squares: the base corner only changes which cell holds the
   9 other rows) and on
   formula-built neighbours that move one row across categorical levels and
   bins, the vector of cell counts moves by at most 2 in L1 (one count down
   by 1, another up by 1), every cell by at most 1, and the worst pair
   reaches 2 (ratio 1: the pairs are adversarial and the sensitivity is
   tight). With the noisy counts forced, D and D' give the same final
   release (the fits are post-processing). One seed per pair: the counts are
   the first and only noisy release, a function of the data alone, and the
   histogram cannot fail before it, so further seeds repeat the same count
   comparison (replay.py's reasons for several seeds do not arise here).
2. Goodness of fit of the histogram's noise (noisy minus true counts, 100,000
   cells) against Laplace(2 / eps), and the same test rejects the noise drawn
   at eps x 0.7 and eps x 1.3 (its power). alpha = 1e-6 per test.
3. Gray-box audit of the count vector on the worst pair at eps = 1, 50,000
   runs a side (batched), with the Laplace log-likelihood-ratio statistic:
   the correct release stays within its claim (false failure <= alpha =
   1e-6); measured eps_lb 0.83-0.87 over 5 seeds.
4. Canaries the audits must flag: the noise halved (really 2 eps: gray-box,
   measured eps_lb 1.75), the sensitivity understated as 1 (replay, and
   gray-box with eps_lb 1.75), and a histogram that leaves empty cells without noise (the
   replay sees the data reach the output outside the noise primitive).
5. No raw data in the release: pickles of the histogram and of its fits hold
   no array of length n and none of the sentinel values planted in the data.

Everything is seeded; the statistical assertions state their false-failure
probability.
"""

from __future__ import annotations

import contextlib
import pickle
import struct
from collections.abc import Iterator, Mapping, Sequence
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpstats
from dpstats.audit import (
    Forcing,
    GrayBoxSamples,
    NeighbourPair,
    audit_sampler,
    corner_pairs,
    graybox_audit,
    replay,
    run_recorded,
    understated_sensitivity,
    weaker_noise,
)
from dpstats.frontend.formula import build_design
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.histogram import cell_means as cm
from dpstats.mechanisms.histogram import mechanism as mech
from dpstats.mechanisms.histogram import release as hg

NAME = "histogram counts"
MEANS = "histogram within-cell means"
ALPHA = 1e-6
UNIT = [(0.0, 1.0)]
CORNERS = corner_pairs(10, UNIT, (0.0, 1.0))
LOWEST_CORNERS = corner_pairs(10, UNIT, (0.0, 1.0), bases="lowest")
"""The 12 moves over the lowest corner: every one moves the row to another cell (two counts move by 1)."""
PRIVACY = PrivacyRequest(eps=1.0)
OPTIONS = {"bins": 2}  # 4 cells: each corner its own cell
COUNTS_ONLY = {"bins": 2, "moment_share": 0}  # Algorithm 1 at the centres: the counts are the one release
BOUNDS = {"y": (0.0, 10.0), "x": (0.0, 10.0)}
LEVELS = {"g": ["a", "b", "c"]}


def _formula_pairs(
    formula: str = "y ~ x + C(g)", bounds: dict = BOUNDS, integers: list[str] | None = None
) -> tuple[NeighbourPair, ...]:
    """Neighbours through the formula front end: the last row moves across levels and bins."""
    base = pd.DataFrame({"y": [1.0, 9.0, 5.0, 2.0, 7.0, 3.0], "x": [0.5, 9.5, 5.0, 2.0, 8.0, 4.0]})
    base["g"] = ["a", "b", "c", "a", "b", "c"]
    moves = [(1.0, 1.0, "a"), (9.9, 9.9, "c"), (1.0, 9.0, "b"), (5.0, 5.0, "a"), (20.0, -3.0, "c")]
    pairs = []
    for i, old in enumerate(moves):
        for new in moves[i + 1 :]:
            d, d_prime = base.copy(), base.copy()
            d.loc[5, ["y", "x", "g"]] = list(old)
            d_prime.loc[5, ["y", "x", "g"]] = list(new)
            designs = [build_design(formula, f, bounds, LEVELS, integers=integers)[0] for f in (d, d_prime)]
            pairs.append(NeighbourPair(f"last row {old} -> {new}", *designs))
    return (*pairs, *(p.swapped() for p in pairs))


FORMULA_PAIRS = _formula_pairs()  # built once: the formula front end is the slow part
MODEL_SCALE_PAIRS = _formula_pairs("np.log(y) ~ np.sqrt(x) + C(g)", {"y": (0.5, 10.0), "x": (0.0, 10.0)})
"""The same moves with y and x binned on the log and square-root scales the formula uses (dpstats/frontend/axes.py):
the row-wise transform of the clipped values keeps every row in one cell."""
INTEGER_PAIRS = _formula_pairs("y ~ x + C(g)", {"y": (0.0, 10.0), "x": (0.0, 1.0)}, integers=["x"])
"""The same moves with x declared whole-valued on [0, 1]: two cells of its own (the default rule affords two
bins), the off-grid and clipped values rounded to the nearest."""
pytestmark = pytest.mark.usefixtures("few_replicates_in_module")  # conftest.FEW_REPLICATES: the replays do not
# depend on the bootstrap's number of replicates (post-processing, compared equal on D and D')


# --------------------------------------------------------------------------
# 1. Replay
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        OPTIONS,  # all 48 corner pairs; the other options (other layouts and fits) on the 12 of LOWEST_CORNERS
        {},
        {"bins": 2, "threshold": "none"},
        {"bins": 2, "q": 0.5},
        {"bins": 3, "q": 0.3, "response": "centre"},
        {"bins": 2, "bound_cells": True},  # the corners are the bounds' cells
        {"bins": 3, "q": 0.5, "bound_cells": True},
        {"bins": 2, "moment_share": 0.6},
        COUNTS_ONLY,
    ],
)
def test_replay_on_corner_pairs_sensitivity_two_and_tight(options: dict) -> None:
    """The counts (L1 sensitivity 2) and the within-cell sums of the centred offsets along y and x (L1
    sensitivity m = 2, dpstats/mechanisms/histogram/cell_means.py) are the only private steps; both bounds are
    reached (ratio 1: a row at the top corner of one cell moved to the bottom corner of another moves both of
    its offsets by 1/2 in each cell). A bound's cell is a point whose rows have offset 0: with bound cells the
    corners move no sum. With moment_share=0 the counts are the one release."""
    pairs = CORNERS if options is OPTIONS else LOWEST_CORNERS
    report = replay(mech.fit, pairs, PRIVACY, seeds=range(1), options=options)
    names = [NAME] if options is COUNTS_ONLY else [NAME, MEANS]
    report.assert_sound(min_ratio=0.9, names=[NAME])
    assert list(report.releases) == names  # nothing else drawn
    worst = report.releases[NAME]
    assert worst.sensitivity == 2.0 and worst.norm == "l1" and worst.max_ratio == pytest.approx(1.0)
    if options is not COUNTS_ONLY:
        means = report.releases[MEANS]
        assert means.sensitivity == 2.0 and means.norm == "l1"
        assert means.max_ratio == (0.0 if options.get("bound_cells") else pytest.approx(1.0))


def test_offset_sums_brute_force_sensitivity_is_m_and_its_supremum() -> None:
    """Every replace-one neighbour of a small data set over a grid of values that holds every bin edge, the
    bounds and values outside them (clipped by the front end, clipped here by the offsets' own clip): the
    offset sums move by at most m = 2 in L1 (the declared sensitivity), and by exactly 2 where a row at the
    top corner of the last (closed) bins is replaced by one at the bottom corner of another cell; the sums
    add the rows' centred offsets."""
    layout = mech.build_layout(["y", "x"], {"y": (0.0, 1.0), "x": (0.0, 1.0)}, {}, 4, 10, 1.0)
    axes = cm.mean_axes(layout)
    assert axes == ("y", "x") and cm.means_sensitivity(len(axes)) == 2.0
    grid = np.linspace(-0.1, 1.1, 31)  # steps of 0.04: the edges 0, 0.25, ..., 1 are on it
    base = pd.DataFrame({"y": [0.1, 0.3, 0.55, 0.8, 0.95], "x": [0.2, 0.45, 0.5, 0.7, 1.0]})
    worst = 0.0
    reference = cm.offset_sums(layout, axes, base)
    for y_old, x_old in [(0.2, 0.2), (0.24, 0.96), (1.0, 1.0), (0.0, 0.0), (0.5, 0.74)]:
        d = pd.concat([base, pd.DataFrame({"y": [y_old], "x": [x_old]})], ignore_index=True)
        sums = cm.offset_sums(layout, axes, d)
        for y_new in grid:
            for x_new in grid:
                d_prime = d.copy()
                d_prime.loc[len(d) - 1, ["y", "x"]] = [y_new, x_new]
                move = np.abs(sums - cm.offset_sums(layout, axes, d_prime)).sum()
                assert move <= 2.0 + 1e-12
                worst = max(worst, move)
        added = sums - reference
        assert np.isclose(added.sum(), sum(cm.centred_offsets(layout.axis(a), d[a].iloc[-1:]).sum() for a in axes))
    assert worst == 2.0


@pytest.mark.parametrize("pairs", [FORMULA_PAIRS, MODEL_SCALE_PAIRS], ids=["formula", "model scale"])
@pytest.mark.parametrize("bound_cells", [False, ["y", "x"]])
def test_replay_on_formula_pairs_across_levels_and_bins(pairs: Sequence[NeighbourPair], bound_cells: object) -> None:
    """With bound cells the moves onto and off the bounds (clipped cells) move a row into and out of them."""
    options = {"bins": 4, "bound_cells": bound_cells}
    report = replay(mech.fit, pairs, PRIVACY, seeds=range(1), options=options)
    report.assert_sound(min_ratio=0.9, names=[NAME])
    assert report.releases[NAME].max_ratio == pytest.approx(1.0)


def test_replay_on_an_integer_axis() -> None:
    """The default layout of INTEGER_PAIRS gives x one cell per whole number; the replay is sound and tight."""
    layout = mech.build_layout(["y", "x", "g"], {"y": (0.0, 10.0), "x": (0.0, 1.0)}, LEVELS, None, 6, 1.0,
                               integers=["x"])  # fmt: skip
    assert layout.axis("x").integer and layout.axis("x").bins == 2
    report = replay(mech.fit, INTEGER_PAIRS, PRIVACY, seeds=range(1), options={})
    report.assert_sound(min_ratio=0.9, names=[NAME])
    assert report.releases[NAME].max_ratio == pytest.approx(1.0)


@pytest.mark.parametrize(
    "pairs",
    [CORNERS, FORMULA_PAIRS, MODEL_SCALE_PAIRS, INTEGER_PAIRS],
    ids=["corners", "formula", "model scale", "integer"],
)
@pytest.mark.parametrize("bound_cells", [False, True])
def test_one_changed_row_moves_at_most_two_counts_by_one(pairs: Sequence[NeighbourPair], bound_cells: bool) -> None:
    """The runs stop right after the count release (the fits that follow are the replay's concern)."""
    moved = set()
    for pair in pairs:
        (_, log_d), (_, log_p) = (
            run_recorded(
                mech.fit,
                d,
                PRIVACY,
                np.random.default_rng(0),
                forcing=Forcing(stop_at=0),
                options={"bound_cells": bound_cells},
            )
            for d in (pair.d, pair.d_prime)
        )
        assert len(log_d) == len(log_p) == 1 and log_d[0].name == NAME
        diff = log_d[0].value - log_p[0].value
        assert np.abs(diff).max() <= 1 and np.count_nonzero(diff) <= 2 and diff.sum() == 0
        moved.add(int(np.count_nonzero(diff)))
    assert 2 in moved  # attained: the L1 bound 2 is tight


# --------------------------------------------------------------------------
# 2. Goodness of fit of the noise, with the power check
# --------------------------------------------------------------------------


def test_histogram_noise_is_laplace_two_over_eps_and_the_test_has_power() -> None:
    def draw(rng: np.random.Generator, eps: float, size: int) -> np.ndarray:
        counts = np.zeros(size)
        counts[::7] = 3.0  # occupied and empty cells alike
        return hg.release_counts(rng, counts, eps) - counts

    audit = audit_sampler(NAME, draw, stats.laplace(scale=2.0).cdf, eps=1.0, draws=100_000, alpha=ALPHA, seed=7)
    audit.assert_ok()


# --------------------------------------------------------------------------
# 3. Gray-box audit and 4. canaries
# --------------------------------------------------------------------------


WORST = CORNERS[1]  # 9 rows at (0, 0), the last moved from (0, 0) to (1, 0): two counts move by 1


def _graybox(name: str = NAME, options: dict = COUNTS_ONLY, privacy: PrivacyRequest = PRIVACY, **kwargs):
    return graybox_audit(
        mech.fit,
        WORST,
        privacy,
        name,
        runs=50_000,
        seed=3,
        alpha=ALPHA,
        options=options,
        reduce=GrayBoxSamples.laplace_log_likelihood_ratio,
        **kwargs,
    )


@pytest.mark.slow
def test_graybox_audit_within_the_claim_and_with_power() -> None:
    result = _graybox()
    assert result.engine == "batched" and result.eps_claimed == 1.0
    result.assert_within_claim()
    assert result.eps_lb > 0.7, result.as_text()  # the audit sees most of the privacy loss (0.83 measured)


@pytest.mark.slow
def test_graybox_audit_of_the_within_cell_means() -> None:
    """The means' release on WORST (the last row from the corner (0, 0) to (1, 0): both its offsets move by
    1/2 in two cells, the L1 sensitivity m = 2), with the default share of eps = 4: eps 1 claimed, within it,
    and much of it seen: eps_lb 0.65 measured with seed 3 (the move is spread over four coordinates of 1/2;
    at eps 0.25 the audit's resolution at alpha = 1e-6 is too coarse to see much: 0.05)."""
    result = _graybox(MEANS, OPTIONS, PrivacyRequest(eps=4.0))
    assert result.engine == "batched" and result.eps_claimed == 1.0
    result.assert_within_claim()
    assert result.eps_lb > 0.5, result.as_text()


@pytest.mark.slow
def test_canary_halved_noise_is_flagged_by_the_graybox_audit() -> None:
    with weaker_noise(0.5):
        result = _graybox()
    assert result.flagged and result.eps_lb > 1.5, result.as_text()


@pytest.mark.slow
def test_canary_understated_sensitivity_is_flagged_by_replay_and_graybox() -> None:
    with understated_sensitivity(hg, "count_sensitivity"):
        report = replay(mech.fit, CORNERS, PRIVACY, seeds=range(1), options=OPTIONS)
        result = _graybox()
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound()
    assert result.flagged, result.as_text()


def test_canary_understated_means_sensitivity_is_flagged_by_replay() -> None:
    with understated_sensitivity(cm, "means_sensitivity"):
        report = replay(mech.fit, CORNERS, PRIVACY, seeds=range(1), options=OPTIONS)
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound()


@contextlib.contextmanager
def _empty_cells_unnoised() -> Iterator[None]:
    """The classic histogram bug: noise only the occupied cells (the zeros reveal the empty ones)."""
    original = hg.release_counts

    def leaky(rng, counts, eps):
        return np.where(counts > 0, original(rng, counts, eps), 0.0)

    with mock.patch.object(hg, "release_counts", leaky):
        yield


def test_canary_empty_cells_without_noise_is_flagged_by_replay() -> None:
    with _empty_cells_unnoised():
        report = replay(mech.fit, CORNERS, PRIVACY, seeds=range(1), options=COUNTS_ONLY)
    with pytest.raises(AssertionError, match="final release differs"):
        report.assert_sound()


# --------------------------------------------------------------------------
# 5. No raw data in the release
# --------------------------------------------------------------------------

SENTINEL = 987654.321
SENTINEL_LEVEL = "SENTINEL_LEVEL_XYZ"


def _walk(obj, seen: set | None = None) -> Iterator[object]:
    """Every object reachable from ``obj`` through attributes and containers."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, str | bytes | int | float | bool | type(None) | np.generic | np.ndarray):
        return
    if isinstance(obj, pd.Series | pd.DataFrame | pd.Index | pd.Categorical):
        yield from _walk(np.asarray(obj), seen)
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _walk(key, seen)
            yield from _walk(value, seen)
    elif isinstance(obj, list | tuple | set | frozenset):
        for item in obj:
            yield from _walk(item, seen)
    elif hasattr(obj, "__dict__"):
        yield from _walk(vars(obj), seen)


def _private_frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    frame = pd.DataFrame({"x": rng.uniform(0, 10, n), "g": rng.choice(["a", "b"], n), "note": "x"})
    frame["y"] = np.clip(1 + 0.8 * frame.x + rng.normal(0, 1, n), 0, 10)
    frame.loc[3, "x"] = SENTINEL  # out of bounds: clipped
    frame.loc[4, "y"] = -SENTINEL
    frame.loc[5, "note"] = SENTINEL_LEVEL  # a column not histogrammed
    return frame


def _assert_no_raw_data(obj: object, n: int) -> None:
    blob = pickle.dumps(obj)
    assert b"987654" not in blob and SENTINEL_LEVEL.encode() not in blob
    for value in (SENTINEL, -SENTINEL):
        assert struct.pack("<d", value) not in blob and struct.pack(">d", value) not in blob
    for item in _walk(pickle.loads(blob)):
        if isinstance(item, np.ndarray):
            assert n not in item.shape, f"an array of shape {item.shape} (n = {n})"


def test_the_release_and_its_fits_hold_no_raw_data() -> None:
    n = 1237  # no cell count of these layouts
    frame = _private_frame(n)
    kwargs = {"bounds": BOUNDS, "levels": {"g": ["a", "b"]}, "random_state": 0}
    hist = dpstats.noisy_histogram(frame, ["y", "x", "g"], 1.0, **kwargs)
    assert hist.layout.n_cells != n
    fits = [hist, hist.ols("y ~ x + g"), hist.quantreg("y ~ x + g", 0.5), hist.to_frame()]
    fits.append(dpstats.dp_ols("y ~ x + g", frame, eps=1.0, method="histogram", **kwargs))
    fits.append(dpstats.dp_quantreg("y ~ x + g", frame, 0.5, eps=1.0, method="histogram", **kwargs))
    for obj in fits:
        _assert_no_raw_data(obj, n)
        assert "987654" not in repr(obj)
    for res in fits[1:3] + fits[4:]:
        assert "987654" not in res.summary().as_text() and "987654" not in str(res.to_dict())
    sizes = {
        len(pickle.dumps(dpstats.noisy_histogram(_private_frame(m), ["y", "x", "g"], 1.0, bins=5, **kwargs)))
        for m in (500, 5000)
    }
    assert len(sizes) == 1  # the release does not grow with n (fixed bins)
