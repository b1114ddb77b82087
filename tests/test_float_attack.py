"""Mironov's (2012) floating-point attack (dpstats/audit/float_attack.py): controls, then dpstats' releases.

The controls run the generic attack (every form of ``float_attack.FORMS``, both ``log`` implementations)
against textbook samplers written in numpy, one per form, so that no form-specific trick passes them; the
attack must beat the threshold that the tests of dpstats' releases below hold dpstats to. Those tests fail
while dpstats adds numpy's ``Generator.laplace`` to the statistic (dpstats/privacy/noise.py) and pass once
its samplers are float-safe (the project's notes/FLOAT_SAFETY.md).

A control cannot ask 0.8 of a generic attack here: against a count of 10 vs 11 with scale 20, the union of
the forms' images holds a release's double at the other location too about 60% of the time, and the attack
is right on about 0.69-0.71 of the releases whatever the form (measured on 20,000 releases per form: numpy's
Laplace 0.706, ``loc - noise`` 0.694, ``loc ± b*(-log u)`` 0.701, ``loc ± b*(-log1p(-u))`` 0.694). An attack
that knows numpy's form reaches 0.83 against it, but no single-release rule reaches 0.8 against the
exponential forms (0.71 for one that knows the form): their images, on the full 2^-53 grid, are twice as
dense as numpy's, and contain numpy's.

Every test is seeded: releases use ``np.random.default_rng(seed)`` with consecutive seeds, and the order of
the sides and the ties use the attack's ``seed``. A test's false-failure rate is the probability, over
those seeds, that it fails although the property holds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.audit.float_attack import (
    FORMS,
    LIBM,
    distinguishing_attack,
    dp_accuracy_bound,
    forms_named,
    in_image,
    interval_attack,
    preimages,
)
from dpstats.privacy import noise

EPS = 0.1
CONTROL_RELEASES = 1000
DP = {releases: dp_accuracy_bound(EPS, releases) for releases in (400, 1000, 2000)}
"""The bound at eps = 0.1 (0.52498) plus 4 binomial standard deviations, by number of releases: 0.6249 at 400
(false failure 3.4e-5), 0.5881 at 1,000 (2.7e-5), 0.5696 at 2,000 (2.9e-5). The tests of dpstats use 2,000
releases where a release is cheap, fewer where it is not; the controls must beat the loosest threshold."""
LOOSEST = max(bound.threshold for bound in DP.values())

COUNTS = (10.0, 11.0)
"""One row moved between two cells: cell 1's count goes from 10 to 11."""
COUNT_SCALE = 2.0 / EPS
"""The histogram's Laplace scale: a replace-one move changes two counts, an L1 sensitivity of 2."""

Sampler = Callable[[float, float, np.random.Generator], float]


def numpy_laplace(loc: float, scale: float, rng: np.random.Generator) -> float:
    """The textbook release ``count + Laplace``: numpy's ``Generator.laplace``."""
    return loc + rng.laplace(0.0, scale)


def negated_laplace(loc: float, scale: float, rng: np.random.Generator) -> float:
    """``loc - noise`` with numpy's Laplace noise."""
    return loc - rng.laplace(0.0, scale)


def _sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < 0.5 else -1.0


def exponential_log(loc: float, scale: float, rng: np.random.Generator) -> float:
    """``loc ± b*E`` with ``E = -log(u)`` (an exponential by inversion) and a random sign."""
    u = rng.random()
    return loc + _sign(rng) * (scale * -np.log(u))


def exponential_log1p(loc: float, scale: float, rng: np.random.Generator) -> float:
    """``loc ± E`` with ``E = -b*log1p(-u)`` and a random sign."""
    u = rng.random()
    return loc + _sign(rng) * (-scale * np.log1p(-u))


CONTROLS = (numpy_laplace, negated_laplace, exponential_log, exponential_log1p)


def _releases(sampler: Sampler, locs: tuple[float, float], scale: float, first_seed: int) -> Callable[[int], float]:
    """``release(side)``: a fresh draw of ``sampler`` at ``locs[side]``, each with the next seed."""
    seeds = itertools.count(first_seed)
    return lambda side: float(sampler(locs[side], scale, np.random.default_rng(next(seeds))))


# --------------------------------------------------------------------------
# The preimage test and the bound
# --------------------------------------------------------------------------


def test_numpy_laplace_leaks_its_uniform() -> None:
    """Every output of numpy's Laplace is in its image at its location, in the one-to-many regime (loc 10, scale
    20) and the many-to-one one (loc 1e12, scale 1, where the window is bisected); and inverting it pins the
    generator's 53-bit output down to a grid point or two (Mironov 2012): the one found maps to the same double
    as the generator's and is at most 2 grid steps from it.

    False-failure rate: 0 (a sampler's output is in its own image whatever the seed; at loc 10, scale 20,
    numpy's forms map neighbouring grid points at least 0.8 units in the last place apart, and any three
    consecutive ones more than 2 apart, so at most two round to one double).
    """
    numpy_forms = forms_named(["loc + b*log(2u)", "loc - b*log(2-u-u)"])
    for loc, scale in ((10.0, 20.0), (1e12, 1.0)):
        for seed in range(50):
            y = float(np.random.default_rng(seed).laplace(loc, scale))
            k = round(np.random.default_rng(seed).random() * 2.0**53)  # the same next_double
            assert in_image(y, loc, scale)
            if loc == 10.0:
                (found,) = preimages(y, loc, scale, numpy_forms, (LIBM,))
                assert abs(found.k - k) <= 2


def test_preimage_test_rejects_what_no_form_outputs() -> None:
    """Non-finite values are in no image, and numpy's image at loc 10 and scale 20 misses a sizeable share of the
    doubles next to its outputs (what the attack lives on).

    False-failure rate: below 1e-9 (about 0.3 of the neighbouring doubles are hit at this scale; 200 seeded
    outputs with fewer than 20 misses would be a binomial tail far below that).
    """
    assert not in_image(float("nan"), 10.0, 20.0)
    assert not in_image(float("inf"), 10.0, 20.0)
    numpy_forms = forms_named(["loc + b*log(2u)", "loc - b*log(2-u-u)"])
    misses = 0
    for seed in range(200):
        y = float(np.random.default_rng(seed).laplace(10.0, 20.0))
        misses += not in_image(np.nextafter(y, np.inf), 10.0, 20.0, numpy_forms)
    assert misses >= 20


def test_fused_multiply_add_is_covered_on_request() -> None:
    """A sampler whose last step is a fused multiply-add (``loc + b*T`` rounded once, as a compiler contracting
    it computes it) is in the image with ``fused=True``.

    False-failure rate: 0 (every output of that sampler is in the fused image whatever the seed).
    """

    def fused_exponential(loc: float, scale: float, rng: np.random.Generator) -> float:
        t = math.log(rng.random())
        return float(Fraction(loc) + Fraction(_sign(rng) * scale) * Fraction(t))

    for seed in range(50):
        y = fused_exponential(10.0, COUNT_SCALE, np.random.default_rng(seed))
        assert in_image(y, 10.0, COUNT_SCALE, fused=True)


def test_dp_accuracy_bound() -> None:
    """The bound is e^eps / (1 + e^eps), the allowance 4 binomial standard deviations, and the stated
    false-failure probability the exact binomial tail, below 1e-4. Deterministic (false-failure rate 0)."""
    for releases, dp in DP.items():
        assert dp.bound == pytest.approx(np.exp(EPS) / (1 + np.exp(EPS)), rel=1e-12)
        assert dp.allowance == pytest.approx(4 * np.sqrt(dp.bound * (1 - dp.bound) / releases), rel=1e-12)
        assert 1e-6 < dp.false_failure < 1e-4
    assert abs(LOOSEST - 0.6249) < 1e-4
    assert dp_accuracy_bound(0.0, 1000).bound == 0.5


# --------------------------------------------------------------------------
# Controls: the attack breaks textbook samplers, whatever their form
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sampler", CONTROLS, ids=lambda s: s.__name__)
def test_control_attack_breaks_textbook_sampler(sampler: Sampler) -> None:
    """The generic attack tells a count of 10 from 11 (eps = 0.1, scale 20) through a textbook sampler of
    every form above the loosest threshold the dpstats tests use (0.6249, at 400 releases): 1,000 releases.

    Its accuracy is 0.69 to 0.71 for every form (module docstring); over 1,000 releases it is at most 0.6249
    with probability P(Binomial(1000, 0.69) <= 624) = 5e-6 (2.5e-5 at 0.685): false-failure rate below 1e-4
    per form.
    """
    release = _releases(sampler, COUNTS, COUNT_SCALE, first_seed=10_000)
    result = distinguishing_attack(release, *COUNTS, COUNT_SCALE, releases=CONTROL_RELEASES, seed=1)
    assert result.accuracy > LOOSEST, result
    assert result.decisive_correct == result.decisive  # a decisive guess is never wrong on a textbook sampler


NUMPY_FORMS = ("loc + b*log(2u)", "loc - b*log(2-u-u)")


def test_control_attack_on_numpy_laplace_reaches_eighty_percent() -> None:
    """The attack told numpy's form (its two branches) tells 10 from 11 through ``Generator.laplace`` at eps = 0.1
    with accuracy >= 0.8 over 2,000 releases (Mironov 2012's setting; issue 39's control).

    Its accuracy is 0.83 (measured on 20,000 releases: module docstring), so the false-failure rate is
    P(Binomial(2000, 0.83) <= 1599) = 2e-4.
    """
    release = _releases(numpy_laplace, COUNTS, COUNT_SCALE, first_seed=60_000)
    forms = forms_named(list(NUMPY_FORMS))
    result = distinguishing_attack(release, *COUNTS, COUNT_SCALE, releases=2000, seed=6, forms=forms)
    assert result.accuracy >= 0.8, result


def test_control_attack_uses_no_form_specific_trick() -> None:
    """The attack is one rule for every form: it finds each control's outputs in the image at their own location.

    False-failure rate: 0 (each control is one of ``FORMS``, and a sampler's output is in its image).
    """
    for sampler in CONTROLS:
        release = _releases(sampler, COUNTS, COUNT_SCALE, first_seed=20_000)
        for side in (0, 1, 0, 1, 0, 1):
            assert in_image(release(side), COUNTS[side], COUNT_SCALE, FORMS)


# --------------------------------------------------------------------------
# dpstats' releases (fail until the samplers are float-safe)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "sensitivity"),
    [
        pytest.param((10.0, 11.0), 1.0, id="count"),
        # the difference computed in floating point (exact here: Sterbenz), so that |value' - value| is the
        # sensitivity itself, not a rounding off it
        pytest.param((0.3, 0.3 + 1 / 7), (0.3 + 1 / 7) - 0.3, id="non-integer"),
    ],
)
def test_laplace_mechanism_within_dp_bound(values: tuple[float, float], sensitivity: float) -> None:
    """``noise.laplace_mechanism`` at eps = 0.1 on two values a sensitivity apart: the attack's accuracy over
    2,000 releases stays within e^0.1 / (1 + e^0.1) + 4 binomial standard deviations (0.5696).

    False-failure rate for an eps-DP release: 2.9e-5 (``DP[2000].false_failure``: the exact binomial tail, an
    upper bound by Hoeffding 1956). 2,000 releases, not 400: at scale 10 numpy's Laplace gives the attack
    only about 0.65, which 400 releases would catch 83% of the time.
    """
    assert abs(values[1] - values[0]) == sensitivity
    scale = sensitivity / EPS  # the mechanism's own scale expression

    seeds = itertools.count(30_000)

    def release(side: int) -> float:
        rng = np.random.default_rng(next(seeds))
        return float(noise.laplace_mechanism(rng, values[side], sensitivity, EPS, "float attack"))

    for forms in (FORMS, forms_named(list(NUMPY_FORMS))):  # every form at once, and the control's own
        result = distinguishing_attack(release, *values, scale, releases=2000, seed=2, forms=forms)
        assert result.accuracy <= DP[2000].threshold, result


@pytest.mark.skip(
    reason="zCDP: the bound is clean, 1/2 + sqrt(rho/2)/2 (KL <= rho, then Pinsker), but the attack has no "
    "Gaussian form, so no control: numpy's normal is a ziggurat, not a monotone map of one uniform"
)
def test_gaussian_mechanism_within_zcdp_bound() -> None:
    """``noise.gaussian_mechanism`` is rho-zCDP: its record has eps = inf. Skipped (false-failure rate: n/a).

    rho-zCDP bounds the Kullback-Leibler divergence between the neighbours' outputs by rho (Bun & Steinke
    2016, the Renyi divergence of order 1), so by Pinsker any guess is right with probability at most
    1/2 + sqrt(rho / 2) / 2; that bound is easy to test. What is missing is an attack with a control: the
    forms of dpstats/audit/float_attack.py are inverse-CDF maps of one uniform (Laplace, exponential), and
    against numpy's ziggurat Gaussian they find nothing, so a pass would prove nothing about the sampler
    (Jin et al. 2022 attack Gaussian samplers with other means).
    """


def test_noisy_histogram_within_dp_bound() -> None:
    """``dpstats.noisy_histogram`` at eps = 0.1 on two data sets differing in one row moved from cell a to cell b:
    the attack on cell a's released count (``res.counts[0]``, locations the true counts 11 and 10, Laplace
    scale 2 / eps) stays within the eps-DP bound + 4 binomial standard deviations (0.5881) over 1,000 releases.

    False-failure rate for an eps-DP release: 2.7e-5 (``DP[1000].false_failure``).
    """
    sides = (
        pd.DataFrame({"g": ["a"] * 11 + ["b"] * 9}),
        pd.DataFrame({"g": ["a"] * 10 + ["b"] * 10}),  # one row moved from a to b
    )
    locs = (11.0, 10.0)
    levels = {"g": ["a", "b"]}
    assert list(dpstats.noisy_histogram(sides[0], ["g"], eps=EPS, levels=levels).to_frame()["g"]) == ["a", "b"]

    seeds = itertools.count(40_000)

    def release(side: int) -> float:
        hist = dpstats.noisy_histogram(sides[side], ["g"], eps=EPS, levels=levels, random_state=next(seeds))
        return float(hist.counts[0])

    result = distinguishing_attack(release, *locs, COUNT_SCALE, releases=1000, seed=3)
    assert result.accuracy <= DP[1000].threshold, result


NOISYSTATS_RELEASE = "ncov(x, y)"


def _noisystats_fit(data: pd.DataFrame, seed: int):
    """NoisyStats on ``data`` (x, y in [0, 1], no standard errors), with its noisy releases recorded."""
    with noise.recording() as log:
        res = dpstats.dp_ols(
            "y ~ x",
            data,
            eps=EPS,
            bounds={"x": (0.0, 1.0), "y": (0.0, 1.0)},
            method="noisystats",
            random_state=seed,
            se_share=0.0,
        )
    (record,) = [r for r in log if r.name == NOISYSTATS_RELEASE]
    return res, record


def test_noisystats_sums_within_dp_bound() -> None:
    """``dp_ols(method="noisystats")`` at eps = 0.1 on neighbouring data sets (row 0 replaced by (1, 1)): the attack
    on the released ``ncov(x, y)`` (locations its exact pre-noise values and scale sensitivity / eps of its
    share, from ``noise.recording()``) stays within the call's eps-DP bound + 4 binomial standard deviations
    (0.6249) over 400 releases (the bound of its own eps/3, 0.508, would be tighter; the call's is what
    ``dp_ols`` promises).

    The bounds are [0, 1], so the unit scale is the user's and ``res.noisy_stats`` publishes the attacked
    double itself. 400 releases (a fit takes about 10 ms). False-failure rate for an eps-DP release: 3.4e-5
    (``DP[400].false_failure``).
    """
    rng = np.random.default_rng(5)
    first = pd.DataFrame({"x": rng.random(40), "y": rng.random(40)})
    second = first.copy()
    second.loc[0, ["x", "y"]] = 1.0
    sides = (first, second)
    records = [_noisystats_fit(data, seed=0) for data in sides]
    for res, record in records:
        assert float(np.ravel(res.noisy_stats[NOISYSTATS_RELEASE])[0]) == float(np.ravel(record.noisy)[0])
    locs = tuple(float(np.ravel(record.value)[0]) for _, record in records)
    sensitivity, eps = records[0][1].sensitivity, records[0][1].eps
    assert (sensitivity, eps) == (records[1][1].sensitivity, records[1][1].eps)
    assert 0 < abs(locs[1] - locs[0]) <= sensitivity
    scale = sensitivity / eps

    seeds = itertools.count(50_000)

    def release(side: int) -> float:
        return float(np.ravel(_noisystats_fit(sides[side], next(seeds))[1].noisy)[0])

    result = distinguishing_attack(release, *locs, scale, releases=400, seed=4)
    assert result.accuracy <= DP[400].threshold, result


NEWTON_RELEASE = "newton score"


def _newton_fit(data: pd.DataFrame, seed: int):
    """DP Newton's logit on ``data`` (x in [0, 1], y 0/1), with its first released score recorded."""
    with noise.recording() as log:
        dpstats.dp_logit("y ~ x", data, eps=EPS, bounds={"x": (0.0, 1.0)}, method="newton", random_state=seed,
                         margins_share=0)  # fmt: skip
    return next(r for r in log if r.name == NEWTON_RELEASE)


def test_newton_score_within_dp_bound() -> None:
    """``dp_logit(method="newton")`` at eps = 0.1 on neighbouring data sets (row 0 replaced by (x, y) = (1, 0)): the
    attack on the intercept's coordinate of its first released score sum (at the start 0, so its exact values and
    scale are the recorded ones) stays within the call's eps-DP bound + 4 binomial standard deviations over 400
    releases. False-failure rate for an eps-DP release: 3.4e-5 (``DP[400].false_failure``)."""
    rng = np.random.default_rng(6)
    first = pd.DataFrame({"x": rng.random(40), "y": (rng.random(40) < 0.5).astype(float)})
    first.loc[0, ["x", "y"]] = [0.0, 1.0]
    second = first.copy()
    second.loc[0, ["x", "y"]] = [1.0, 0.0]
    sides = (first, second)
    records = [_newton_fit(data, seed=0) for data in sides]
    locs = tuple(float(np.ravel(record.value)[0]) for record in records)
    sensitivity, eps = records[0].sensitivity, records[0].eps
    assert (sensitivity, eps) == (records[1].sensitivity, records[1].eps)
    assert 0 < abs(locs[1] - locs[0]) <= sensitivity
    seeds = itertools.count(60_000)

    def release(side: int) -> float:
        return float(np.ravel(_newton_fit(sides[side], next(seeds)).noisy)[0])

    result = distinguishing_attack(release, *locs, sensitivity / eps, releases=400, seed=7)
    assert result.accuracy <= DP[400].threshold, result


# --------------------------------------------------------------------------
# The exponential mechanism's choice (a point of an interval with data-valued ends)
# --------------------------------------------------------------------------

EDGES = (np.array([-1.0, 0.1, 0.2, 1000.0]), np.array([-1.0, 0.1, 0.23, 1000.0]))
"""Neighbouring sorted values with the output range's ends: one value moved from 0.2 to 0.23 (same ranks). The
textbook map ``low + width * k / 2^53`` leaks where its step exceeds the spacing of doubles and ``low`` is not
on the coarser grid: here the wide last interval, which starts at the moved value."""
RANKS = -np.abs(np.arange(3) - 1.0)
"""Interval i's utility: minus its rank distance to the median (Alabi et al. 2022, Algorithm 3), sensitivity 1."""


def _textbook_interval_point(edges: np.ndarray, rng: np.random.Generator) -> float:
    """The textbook sampler: an interval by its exact probability, then ``low + width * u`` on doubles."""
    weights = np.diff(edges) * np.exp(EPS / 2 * RANKS)
    i = rng.choice(edges.size - 1, p=weights / weights.sum())
    return float(edges[i] + (edges[i + 1] - edges[i]) * rng.random())


def test_control_interval_attack_breaks_the_textbook_exponential_mechanism() -> None:
    """The uniform-image attack tells the neighbours apart through the textbook sampler at eps = 0.1: accuracy
    above 0.6249 over 2,000 releases (a third of the releases are in the sparse part of an image, and those
    are told apart without error).

    False-failure rate: measured 0.67 on 4,000 releases, so P(Binomial(2000, 0.67) <= 1249) = 1e-5.
    """
    seeds = itertools.count(70_000)
    result = interval_attack(
        lambda side: _textbook_interval_point(EDGES[side], np.random.default_rng(next(seeds))), EDGES, 1000, seed=7
    )
    assert result.accuracy > LOOSEST, result


def test_exponential_mechanism_point_within_dp_bound() -> None:
    """``noise.exponential_mechanism_intervals`` (the exact sampler of Algorithm 3) at eps = 0.1: the same attack
    stays within the bound + 4 binomial standard deviations (0.5881) over 1,000 releases.

    False-failure rate for an eps-DP release: 2.7e-5 (``DP[1000].false_failure``).
    """
    seeds = itertools.count(80_000)

    def release(side: int) -> float:
        rng = noise.make_rng(next(seeds))
        return noise.exponential_mechanism_intervals(rng, EDGES[side], RANKS, EPS, 1.0)

    result = interval_attack(release, EDGES, 1000, seed=8)
    assert result.accuracy <= DP[1000].threshold, result


def test_exponential_mechanism_finite_choice_within_dp_bound() -> None:
    """Permute-and-flip over a finite set (Theil-Sen's grid median) at eps = 0.1 on utilities one apart: guessing
    the side from the chosen index (the best test: the likelihood ratio) is right at most at the bound + 4 sds.

    Neighbouring utilities (0, -1, -2) and (-1, 0, -2); the guess is side 0 iff index 0 is chosen. False-failure
    rate for an eps-DP release: 2.9e-5 (``DP[2000].false_failure``).
    """
    utilities = (np.array([0.0, -1.0, -2.0]), np.array([-1.0, 0.0, -2.0]))
    rng = noise.make_rng(9)
    order = np.random.default_rng(10).permutation(np.repeat([0, 1], 1000))
    correct = sum(
        (noise.permute_and_flip(rng, utilities[side], EPS, 1.0) == 0) == (side == 0) for side in order.tolist()
    )
    assert correct / order.size <= DP[2000].threshold
