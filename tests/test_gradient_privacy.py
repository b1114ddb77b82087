"""Privacy audit of method="gradient" (Alabi et al. 2022, Algorithms 6-7, Lemmas 22 and 24).

docs/PRIVACY_TESTING.md, "An audit that fits in CI", with the shared harness in
dpstats/audit:

1. Replay on the 48 corner neighbours of [0, 1]^2 (``corner_pairs``): every
   round's clipped gradient sum moves by at most its declared sensitivity
   (L1 4 tau for Laplace, L2 2 sqrt(2) tau for Gaussian), with D's outputs
   forced on D' so that both runs sit at the same iterate in every round.
   The rounds' sensitivity is a constant (not a function of earlier
   outputs) and the descent cannot fail, so one seed per pair suffices
   there (dpstats/audit/replay.py); the standard errors' bread has a
   sensitivity set by the released centre, so their "reaching" check
   replays two seeds. Variant ``approx`` runs the rounds of ``zcdp`` (its
   (eps, delta) converted to rho once): it is replayed with the standard
   errors, not again in the T = 20 check.
   The worst pair reaches the bound exactly where the clip binds (tau = 0.1
   at the default start; tau = 1 at the start (-1, -1)). At the default start
   with tau = 1 no row reaches the clip and the worst pair reaches exactly
   1/2 of the L1 bound (module docstring of gradient.py): the bound is the
   worst case over iterates.
2. Clipping happens per row, before the sum: the logged value is the sum of
   independently clipped row gradients, not the clipped sum.
3. Canaries (deliberately broken variants) that the replay must flag (on the
   12 corner moves over the lowest corner, one seed): no clipping, half the
   sensitivity. The standard errors' releases (column
   sum, centred bread, weighted HC meat; dpstats/mechanisms/gradient/inference.py)
   are replayed too, within and reaching their L1 (pure) or L2 (Gaussian)
   sensitivity, and their canaries (half the bread's or the meat's
   sensitivity) are flagged.
4. Gray-box audit (dpstats/audit/graybox.py) of one round's release on the
   worst pair, at a per-round budget near 1, 50,000 runs a side (batched):
   the correct release stays within its claim (false failure <= alpha = 1e-6)
   and the canaries (noise halved = 2x eps; half the sensitivity) are flagged.
   Laplace: the event is "both coordinates beyond the midpoint on D's side"
   (the region where the 2-d Laplace loss is the full eps); measured eps_lb
   0.85-0.88 for a claim of 1, 1.79-1.81 for the canaries (4 seeds). Gaussian
   (rho_t = 1): the claim is the exact eps at delta = 1e-3 of a Gaussian with
   sensitivity/sigma = sqrt(2 rho_t) (Balle & Wang 2018), 4.85; measured
   eps_lb 2.75 for the correct release, 5.41 for both canaries (seed 3).
5. Goodness of fit of the Gaussian mechanism's noise (new in this module's
   noise.py addition) with a power check, as the Laplace sampler's.

Seeded; the goodness-of-fit tests use alpha = 1e-6 (false-failure
probability 1e-6 per test).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from dpstats.audit import NeighbourPair, graybox_audit, pair_from_points, understated_sensitivity, weaker_noise
from dpstats.audit.graybox import GrayBoxSamples
from dpstats.audit.neighbours import corner_pairs
from dpstats.audit.replay import replay
from dpstats.mechanisms import PrivacyRequest
from dpstats.mechanisms.gradient import inference
from dpstats.mechanisms.gradient import mechanism as gd
from dpstats.privacy.accounting import gaussian_delta
from dpstats.privacy.noise import gaussian_mechanism, recording
from dpstats.uncertainty import sandwich

UNIT = [(0.0, 1.0)]
PAIRS = corner_pairs(10, UNIT, (0.0, 1.0))
CANARY_PAIRS = corner_pairs(10, UNIT, (0.0, 1.0), bases="lowest")
"""The 12 moves over the lowest corner: a canary needs one flagging pair, and each is flagged on many of these."""
VARIANT_PRIVACY = {
    "pure": PrivacyRequest(1.0),
    "approx": PrivacyRequest(1.0, 1e-6),
    "zcdp": PrivacyRequest(None, rho=0.5),
}


def _replay(variant: str, seeds: int = 1, pairs: list[NeighbourPair] = PAIRS, **options):
    """The replay on ``pairs`` (the 48 corner pairs), ``seeds`` seeds per pair (module docstring, step 1)."""
    return replay(gd.fit, pairs, VARIANT_PRIVACY[variant], seeds=range(seeds), options={"variant": variant, **options})


@pytest.mark.parametrize("variant", ["pure", "zcdp"])
@pytest.mark.parametrize(("tau", "start"), [(0.1, (0.5, 0.5)), (1.0, (-1.0, -1.0))])
def test_replay_sound_and_tight_where_the_clip_binds(variant: str, tau: float, start: tuple[float, float]) -> None:
    report = _replay(variant, T=20, tau=tau, start=start)
    report.assert_sound(min_ratio=None)  # every round of every pair, no violation
    assert len(report.releases) == 20 + len(inference.FRACTIONS)  # the rounds, then the standard errors' releases
    first = report.releases["gradient[0]"]
    assert first.norm == ("l1" if variant == "pure" else "l2")
    assert first.sensitivity == pytest.approx(4 * tau if variant == "pure" else 2 * math.sqrt(2) * tau)
    assert 0.9 <= first.max_ratio <= 1 + 1e-9, report.as_text()
    assert max(r.max_ratio for r in report.releases.values()) <= 1 + 1e-9


def test_replay_default_start_reaches_half_the_l1_bound() -> None:
    """tau = 1 at (0.5, 0.5): |g| <= 3/4, worst move (1.5, 0.5): L1 2 = half of 4 tau (module docstring)."""
    report = _replay("pure", T=4)
    report.assert_sound(min_ratio=None)
    assert report.ratio("gradient[0]") == pytest.approx(0.5)


def test_clipping_happens_per_row_before_the_sum() -> None:
    rng = np.random.default_rng(0)
    u, v = rng.uniform(0, 1, 200), rng.uniform(0, 1, 200)
    tau = 0.05
    with recording() as log:
        gd.fit_unit(u, v, PrivacyRequest(1.0), np.random.default_rng(1), T=2, tau=tau, start=(-1.0, 2.0))
    a, b = 0.75 - u, u - 0.25
    r = 2 * (2 * (-1.0 * a + 2.0 * b) - v)
    per_row = np.column_stack([r * a, r * b])
    expected = np.clip(per_row, -tau, tau).sum(axis=0)
    np.testing.assert_allclose(log[0].value, expected, rtol=1e-12)
    assert np.abs(np.clip(per_row.sum(axis=0), -tau, tau) - expected).max() > 1.0  # the two orders differ here


@pytest.mark.parametrize("variant", ["pure", "approx", "zcdp"])
def test_replay_standard_error_releases_reach_their_sensitivity(variant: str) -> None:
    """The column sum, the centred bread and the weighted meat: within, and reaching, their L1 / L2 sensitivity.

    The released estimate and centre are forced on D' (adaptive composition),
    and the bootstrap that follows is the same on both sides (post-processing).
    """
    report = _replay(variant, seeds=2, T=4)
    report.assert_sound(min_ratio=None)
    for name, _ in inference.FRACTIONS:
        release = report.releases[name]
        assert release.norm == ("l1" if variant == "pure" else "l2")
        assert 0.95 <= release.max_ratio <= 1 + 1e-9, report.as_text()
    assert report.releases["SE: sum(x)"].sensitivity == 1.0


WIDTHS, REACH = sandwich.entry_widths, inference.bread_reach
SE_CANARIES = {
    "SE: HC meat": (sandwich, "entry_widths", lambda box, bound: 0.5 * WIDTHS(box, bound)),
    "SE: bread": (inference, "bread_reach", lambda centre: 0.5 * REACH(centre)),
}


@pytest.mark.parametrize("variant", ["pure", "zcdp"])
@pytest.mark.parametrize("release", list(SE_CANARIES))
def test_replay_flags_understated_standard_error_sensitivities(
    monkeypatch: pytest.MonkeyPatch, variant: str, release: str
) -> None:
    monkeypatch.setattr(*SE_CANARIES[release])
    report = _replay(variant, pairs=CANARY_PAIRS, T=4)
    assert {v.name for v in report.violations} == {release}


def _unclipped(u: np.ndarray, v: np.ndarray, p: np.ndarray, tau: float) -> np.ndarray:
    a, b = 0.75 - u, u - 0.25
    r = 2.0 * (2.0 * (p[0] * a + p[1] * b) - v)
    return np.array([(r * a).sum(), (r * b).sum()])


@pytest.mark.parametrize("variant", ["pure", "zcdp"])
@pytest.mark.parametrize("canary", ["unclipped", "half sensitivity"])
def test_canaries_are_flagged(monkeypatch: pytest.MonkeyPatch, variant: str, canary: str) -> None:
    if canary == "unclipped":
        monkeypatch.setattr(gd, "clipped_gradient_sum", _unclipped)
    elif variant == "pure":
        monkeypatch.setattr(gd, "l1_sensitivity", lambda tau: 2.0 * tau)
    else:
        monkeypatch.setattr(gd, "l2_sensitivity", lambda tau: math.sqrt(2.0) * tau)
    report = _replay(variant, pairs=CANARY_PAIRS, T=4, start=(-1.0, -1.0))
    assert report.violations, f"canary {canary!r} ({variant}) was not flagged"
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        report.assert_sound(min_ratio=None)


# --------------------------------------------------------------------------
# Gray-box audit of one round, and its canaries
# --------------------------------------------------------------------------

# tau = 0.1 at the default start: row (0, 1) contributes (-0.1, 0.1), row (0, 0) (0.1, -0.1).
_BASE = np.tile([0.5, 0.5], (9, 1))
WORST = pair_from_points(
    np.vstack([_BASE, [0.0, 1.0]]), np.vstack([_BASE, [0.0, 0.0]]), UNIT, (0.0, 1.0), label="9 x (.5,.5), (0,1)->(0,0)"
)
ROUND = {"T": 2, "tau": 0.1}  # eps = 2 (or rho = 2) over T = 2 rounds: a per-round budget of 1
CANARIES = {
    "none": None,
    "2x eps (noise halved)": "noise",
    "half sensitivity": "sensitivity",
}


def _audit(variant: str, canary: str | None, delta: float = 0.0, reduce=None) -> float:
    sampler, sensitivity = ("laplace", "l1_sensitivity") if variant == "pure" else ("gaussian", "l2_sensitivity")
    context = {
        None: contextlib.nullcontext(),
        "noise": weaker_noise(0.5, sampler),
        "sensitivity": understated_sensitivity(gd, sensitivity),
    }[canary]
    with context:
        result = graybox_audit(
            gd.fit,
            WORST,
            {"pure": PrivacyRequest(2.0), "approx": VARIANT_PRIVACY["approx"], "zcdp": PrivacyRequest(None, rho=2.0)}[
                variant
            ],
            "gradient[0]",
            # the Gaussian canaries clear the (eps, delta) claim by a thin margin: 200,000 runs (batched: seconds)
            runs=50_000 if variant == "pure" else 200_000,
            seed=3,
            delta=delta,
            options={"variant": variant, **ROUND},
            reduce=reduce,
        )
    return result.eps_lb


@pytest.mark.slow
@pytest.mark.parametrize("canary", list(CANARIES))
def test_graybox_pure_round(canary: str) -> None:
    eps_lb = _audit("pure", CANARIES[canary], reduce=GrayBoxSamples.corner_event)
    if CANARIES[canary] is None:
        assert 0.6 < eps_lb <= 1.0  # within the claim eps/T = 1, and the audit sees most of it
    else:
        assert eps_lb > 1.0, f"canary {canary!r} not flagged (eps_lb {eps_lb:.3f})"


def _exact_gaussian_eps(rho: float, delta: float) -> float:
    mu = math.sqrt(2 * rho)
    return brentq(lambda e: gaussian_delta(mu, e) - delta, 0.0, 100.0)


@pytest.mark.slow
@pytest.mark.parametrize("canary", list(CANARIES))
def test_graybox_gaussian_round(canary: str) -> None:
    delta = 1e-3
    claim = _exact_gaussian_eps(2.0 / ROUND["T"], delta)  # zcdp: rho = 2, rho_t = 1
    eps_lb = _audit("zcdp", CANARIES[canary], delta=delta)
    if CANARIES[canary] is None:
        assert eps_lb <= claim
    else:
        assert eps_lb > claim, f"canary {canary!r} not flagged (eps_lb {eps_lb:.3f} vs claim {claim:.3f})"


# --------------------------------------------------------------------------
# Gaussian mechanism: goodness of fit with a power check
# --------------------------------------------------------------------------


def _gaussian_noise(sensitivity: float, rho: float, draws: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    with recording() as log:
        out = gaussian_mechanism(rng, np.zeros(draws), sensitivity, rho, "gof")
    assert log[0].norm == "l2" and log[0].rho == rho and math.isinf(log[0].eps)
    return np.asarray(out)


@pytest.mark.slow
@pytest.mark.parametrize(("sensitivity", "rho"), [(2 * math.sqrt(2), 0.5 / 80), (1.0, 2.0)])
def test_gaussian_mechanism_matches_its_distribution(sensitivity: float, rho: float) -> None:
    """100k draws against N(0, sigma^2), sigma = Delta / sqrt(2 rho); must reject sigma x 0.7 and x 1.3."""
    sigma = sensitivity / math.sqrt(2 * rho)
    noise = _gaussian_noise(sensitivity, rho, 100_000, seed=11)
    assert stats.kstest(noise, "norm", args=(0, sigma)).pvalue > 1e-6
    for wrong in (0.7, 1.3):
        assert stats.kstest(noise, "norm", args=(0, sigma * wrong)).pvalue < 1e-6
