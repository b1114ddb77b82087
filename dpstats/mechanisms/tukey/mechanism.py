"""Tukey depth with propose-test-release: multivariate OLS (and quantile regression) without data bounds.

Amin, Joseph, Ribero, Vassilvitskii (2023), "Easy differentially private linear
regression", Algorithm 2 (DPTukey), with the propose-test-release (PTR) step of
Brown, Gaboardi, Smith, Ullman, Zakynthinou (2021), Algorithm 1 and Lemma 3.8.
``dp_ols(formula, data, eps=..., delta=..., method="tukey", m=None, jackknife=None, skew=None)``, and
``dp_quantreg(..., q=tau, method="tukey")``, whose batches fit the tau-th
regression quantile instead of OLS (dpstats/mechanisms/tukey/quantile_models.py),
and ``dp_logit`` / ``dp_probit`` (``link=``), whose batches fit the link's
bias-corrected MLE, a batch without a finite MLE becoming a fixed pair of
extremes (dpstats/mechanisms/tukey/logit_models.py; the proof below needs
only that each model is a function of its own batch and of data-independent draws):

1. Partition (dpstats/mechanisms/tukey/models.py): a uniformly random permutation, drawn through
   dpstats/privacy/noise.py, splits the n rows into m disjoint batches of ``floor(n/m)``
   or ``ceil(n/m)`` rows; OLS on each batch gives m models in R^d (d design
   columns, intercept included), their ties broken by a tiny jitter.
   ``floor(n/m) >= d`` is required. By default each batch's OLS fit is
   jackknifed (dpstats/mechanisms/tukey/jackknife.py: on a misspecified model,
   as real regressions are, OLS on a few dozen rows is biased by O(1/b), which
   the median of a thousand batches turns into standard errors of bias);
   ``jackknife=False`` is the paper's batch OLS, and the default on a Dask
   DataFrame, whose rows are dealt to the batches one by one and summed on the
   workers (dpstats/mechanisms/tukey/dealt.py: the same proof, below).
2. Approximate Tukey depth T on axis-aligned boxes and the volumes V_i of the
   regions of depth >= i, all in log space (tukey_depth.py; Definition 2.5,
   Lemma 3.3).
3. PTR with eps1 = eps/2: the distance lower bound D (below) is released as
   ``D + Lap(1/eps1)`` (:func:`~dpstats.privacy.noise.laplace_mechanism`, sensitivity 1)
   and the test passes iff the noisy value exceeds ``log(1/(2 delta)) / eps1``.
   A refused test is the paper's ⊥: a failed result with NaN estimates, the
   budget spent. (The public code draws the noise with scale eps1 instead of
   1/eps1 and returns a zero vector on failure: neither is copied.)
4. Restricted exponential mechanism with eps2 = eps/2: a point y with density
   proportional to ``exp(beta T(y))`` on ``{T >= t}``, ``beta = eps2/2``,
   ``t = floor(floor(m/2)/2)``, sampled exactly in integer arithmetic (a depth
   shell piece with exact volumes, then a uniform point in it rounded down to
   a double; Lemma 3.9; dpstats/mechanisms/tukey/exact_draw.py).

Survey weights (``design.weights``, clipped row-wise to their declared range;
docs/DESIGN.md section 2): each batch fits the weighted estimator on its own rows
(weighted least squares, jackknifed with the weighted leave-one-out identity;
the weighted check loss, R's ``quantreg::rq(weights=)``; the weighted MLE,
survey::svyglm's point estimate), dpstats/mechanisms/tukey/models.py. The proof
below is unchanged: read a row as (x, y, w). Replacing one row, weight included,
changes the rows of one batch only, so one model; steps 2-4 see m points of
which one is replaced, whatever the weights and whatever their declared range
(the range is not used: a batch's model may move arbitrarily, and the proof
allows it). Weights and ``unit=`` are not combined (the API refuses them).

Privacy: (eps, delta)-DP for replace-one neighbours with public n (docs/DESIGN.md
section 2), proved directly below rather than by group privacy.

(a) Reduction to models. The partition and the tie-breaking jitter are drawn
independently of the data; fix them. Each model is a function of its own batch
and its own jitter draw, so replacing row r changes only the model of r's
batch: the model multisets Y, Y' (m points each, m public) differ by the
*replacement* of at most one point. (On a Dask DataFrame the partition is a
deal of each row, by its position, to a uniform batch: drawn independently of
the data too, dpstats/mechanisms/tukey/dealt.py.) A mixture, with data-independent weights,
of (eps, delta)-DP mechanisms is (eps, delta)-DP, so it suffices that steps 2-4
are (eps, delta)-DP when one of the m points is replaced. This is a
replacement, not an addition or removal: Amin et al. prove add/remove DP,
where depth is monotone (adding a point never lowers it) and the exponential
mechanism may drop its factor 2 (their Appendix 7.3). Under replacement the
depth goes up in some places and down in others, so the factor 2 returns:
hence ``beta = eps2/2`` (tests/test_tukey_privacy.py shows that ``beta = eps2``
is not eps2-DP on a worst pair). The alternative, group privacy over remove +
add, would run the add/remove mechanism at (eps/2, delta/(1 + e^(eps/2))): the
same beta = eps/4, but only eps/4 for the PTR test and a smaller delta. The
direct proof gives the test eps/2 and the full delta.

(b) Depth under replacement. Every halfspace count changes by -1, 0 or +1, so
``|T_Y - T_Y'| <= 1`` everywhere and ``V_{i+1}(Y) <= V_i(Y') <= V_{i-1}(Y)``.

(c) Safety (our derivation for replacement, after Brown et al. 2021, Lemma 3.8,
and Amin et al. 2023, Lemma 3.6). Let ``p_Y = e^{beta T} 1{T >= t} / Z_Y`` and
Y ~ Y'. Split any set S by ``T' >= t``:

* on ``{T >= t > T'}``, T = t (as ``T' >= T - 1``): mass at most ``e^{beta t} V_t(Y) / Z_Y``;
* on ``{T' >= t}``, ``p_Y <= e^beta (Z_Y' / Z_Y) p_Y'``, and since ``{T' >= t}`` lies in
  ``{T >= t-1}``, ``Z_Y' <= e^beta (Z_Y + e^{beta(t-1)} vol{T = t-1})``; so this part is
  at most ``e^{2 beta} (1 + x) P_Y'(S) <= e^{2 beta} P_Y'(S) + e^{2 beta} x`` with
  ``x = e^{beta(t-1)} vol{T = t-1} / Z_Y``.

With ``vol{T = t-1}, V_t <= V_{t-1}`` and ``Z_Y >= e^{beta(t+g)} V_{t+g}(Y)`` for any
integer g >= 0, for every g:

    P_Y(S) <= e^{2 beta} P_Y'(S) + (1 + e^beta) e^{-beta g} V_{t-1}(Y) / V_{t+g}(Y).

(d) The statistic (:func:`~dpstats.mechanisms.tukey.depth.distance_to_unsafety`):
``D(Y) = 1 + max{k >= 0 : exists g >= 0, log V_{t-k-2} - log V_{t+k+g+1} - beta g <= log(delta / (1 + e^beta))}``
(0 if no k qualifies). If D(Y) >= k + 1, every Z within k replacements of Y is
safe: Z and any neighbour Z' of it are within k + 1 of Y, so by (b)
``V_{t-1}(Z) <= V_{t-k-2}(Y)`` and ``V_{t+g}(Z) >= V_{t+k+g+1}(Y)``, and (c) gives
``P_Z(S) <= e^{eps2} P_Z'(S) + delta`` in both directions. So D is a lower bound on
the number of replacements that reach an unsafe multiset, and ``D = 0`` on an
unsafe one. D is 1-sensitive: a pair (k, g) that qualifies for Y qualifies as
(k - 1, g) for Y' by (b). (Floating point: the sandwich holds exactly for the
computed log volumes, see tukey_depth.py, so this holds for the code too.)

(e) PTR. For neighbours Y, Y' and any event S of the whole output (noisy D,
then ⊥ or the point): if Y is safe, ``P[M(Y) in S] <= e^{eps1+eps2} P[M(Y') in S] + delta``
(the test is eps1-DP, the sampler (eps2, delta)-indistinguishable); if Y is
unsafe, D(Y) = 0 and the test passes with probability
``P[Lap(1/eps1) > log(1/(2 delta))/eps1] = delta`` (at most delta when delta > 1/2), so
``P[M(Y) in S] <= e^{eps1} P[M(Y') in S] + delta``. Hence (eps, delta)-DP.

Differences from the public code (docs/ALGORITHMS.md): its statistic is our
D - 1 (-1 meaning unsafe) and compared with the same threshold, so it is one
unit more conservative; it uses ``V_{t-k-1}``, g >= 1 and
``log(delta / (8 e^{eps1}))``, which follow Brown et al.'s constants, while the
derivation above, for replacement neighbours, needs ``V_{t-k-2}`` and gives the
constant ``1 + e^beta``. The condition is "there exists g" (Brown et al. and
the public code's minimum over g; docs/ALGORITHMS.md's "for every g" is a
slip). A coefficient that a batch cannot estimate (a dummy whose level is
absent from it) is set to +-MODEL_LIMIT with a sign drawn before the data
are read, where the public code (least squares' minimum-norm solution) puts
0, which biased the depth towards 0 (dpstats/mechanisms/tukey/models.py).
Ties between models are broken by a data-independent jitter of relative size
1e-12 (tukey_models.break_ties; the public code adds an absolute 1e-10); a
zero volume that remains is exact (log -inf, so D = 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ...design.matrix import Design
from ...design.units import Units
from ...privacy import noise
from ...privacy.accounting import PrivacySpent
from ...privacy.noise import exponential_mechanism_point_release, laplace_mechanism
from ..base import PrivacyRequest, Release, failed_release, refuse_rho
from . import depth as td
from . import exact_draw, inference
from .dealt import dealt_models
from .default_m import MIN_MODELS, default_m, default_m_binary
from .jackknife import batch_ols_jackknife
from .logit_models import glm_batch_fit
from .models import MODEL_LIMIT, BatchFit, batch_ols, partition_models, unit_partition_models
from .quantile_models import quantile_batch_fit

DEFAULTS: dict[str, object] = {"m": None, "jackknife": None, "skew": None}
"""``jackknife=None``: jackknifed batch OLS fits where the rows are in one place (a pandas DataFrame), the paper's
batch OLS where they stay on a Dask DataFrame's partitions (dpstats/mechanisms/tukey/dealt.py)."""

SE_NOTE = (
    "Standard errors and t intervals cover the sampling error of the aggregate of the m batch fits and the "
    "privacy noise: the fits' spread around the released point is released (se_share of eps) and scales the "
    "exact variance of the mechanism on an idealised cloud of t-distributed fits (sampling: their median; "
    "privacy: the restricted sampler)."
)
NO_SE_NOTE = "se_share=0: no budget was spent on standard errors, so SEs, tests and intervals are NaN."
UNAFFORDABLE_NOTE = (
    "No standard errors: at this n, d, eps and delta the point needs the whole budget (propose-test-release "
    "would refuse at a smaller eps), so the default se_share is 0 here and SEs, tests and intervals are NaN; "
    "pass se_share > 0 to spend part of eps on them anyway."
)
DEALT = "each row dealt to a uniform batch by its position (Dask): sizes vary around n/m"
DEALT_UNITS = "each {unit} dealt whole to a uniform batch (Dask): sizes vary around {count}/m {unit}s"
DEALT_JACKKNIFE = (
    "jackknife=True needs every row in one place (each row's leverage and residual); on a Dask DataFrame the batch "
    "fits are the paper's OLS: leave jackknife unset or pass jackknife=False"
)
PTR_FAILED = (
    "propose-test-release refused: the noisy distance to unsafety was below the threshold "
    "log(1/(2 delta))/eps1 (the paper's failure output; more rows per model or a larger eps helps)"
)
EMPTY_REGION = "the region of depth >= t has zero volume (tied models); no point could be sampled"
DISTANCE = "distance to unsafety (lower bound)"
SAMPLE = "restricted exponential mechanism (Tukey depth)"


def check_request(privacy: PrivacyRequest, options: Mapping[str, object]) -> None:
    """Schema checks before the data are read: delta > 0, a valid ``m``, a boolean (or None) ``jackknife`` and a
    finite ``skew >= 0``."""
    refuse_rho(privacy, "tukey")
    if privacy.delta == 0:
        raise ValueError("method='tukey' is approximate DP (propose-test-release): it needs delta > 0")
    if not isinstance(options.get("jackknife"), bool | np.bool_ | None):
        raise TypeError("jackknife must be True, False or None (the default: True unless the data are on Dask)")
    skew = options.get("skew")
    if skew is None:
        skew = inference.SKEW
    if isinstance(skew, bool) or not isinstance(skew, int | float | np.integer | np.floating):
        raise TypeError("skew (the skewness the intervals' allowance covers) must be a number")
    if not (math.isfinite(skew) and skew >= 0):
        raise ValueError("skew must be finite and >= 0 (0: no allowance for the median's skew)")
    m = options.get("m")
    if m is None:
        return
    if isinstance(m, bool) or not isinstance(m, int | np.integer):
        raise TypeError("m (the number of models) must be None or an integer")
    if m < MIN_MODELS:
        raise ValueError(f"m must be at least {MIN_MODELS}: with fewer models the PTR test can never pass")


def models_for(n: int, d: int, eps: float, delta: float, units: Units | None = None, binary: bool = False) -> int:
    """The default number of models (:func:`.default_m.default_m`; :func:`.default_m.default_m_binary` for a
    binary response, ``binary``); when the privacy unit is a unit of rows,
    the rule read with one unit as one row (each batch holds whole units,
    :func:`.models.unit_partition_models`, and a regressor that is constant within units, as a worker's
    education or sex in a panel, is estimable only from several units per batch)."""
    rule = default_m_binary if binary else default_m
    return rule(n if units is None else units.count, d, eps, delta)


def check_models(n: int, d: int, m: int, units: Units | None = None) -> None:
    """An explicit error when the batches would hold fewer rows than the design has columns, or no unit."""
    if units is not None and units.count < m:
        raise ValueError(
            f"m={m} models need at least m {units.name}s (each model holds whole units); choose m <= {units.count}"
        )
    if n // m < d:
        raise ValueError(
            f"m={m} models on n={n} rows leave floor(n/m)={n // m} rows per model, fewer than the "
            f"d={d} design columns; choose m <= {n // d}"
        )


def ptr_threshold(eps1: float, delta: float) -> float:
    """``log(1/(2 delta)) / eps1``: an unsafe multiset (D = 0) passes with probability delta."""
    return math.log(1.0 / (2.0 * delta)) / eps1


def se_share(n: int, columns: int, privacy: PrivacyRequest, options: Mapping[str, object]) -> float:
    """The part of eps the spreads spend: the user's ``se_share``, else :func:`.inference.default_share`."""
    m = options.get("m")
    binary = options.get("link") is not None
    return privacy.share(
        inference.default_share(n, columns, privacy.eps, privacy.delta, None if m is None else int(m), binary)
    )


def fit(
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    m: int | None = None,
    jackknife: bool | None = None,
    q: float | None = None,
    skew: float | None = None,
    link: str | None = None,
) -> Release:
    """Run the Tukey mechanism on ``design`` (see the module docstring), with its intervals (:mod:`.inference`):
    on batch OLS fits (jackknifed unless ``jackknife=False``: dpstats/mechanisms/tukey/jackknife.py; ``None``
    jackknifes them where the rows are in one place), or on
    batch q-th quantile regressions when ``q`` is given (``dp_quantreg``; not jackknifed), or on batch
    bias-corrected MLEs of ``link`` ("logit" or "probit": ``dp_logit`` / ``dp_probit``). The intervals allow
    for the median of fits whose rows have skewness up to ``skew`` (dpstats/mechanisms/tukey/inference.py,
    step 3); None is :data:`.inference.SKEW` for OLS and quantile fits and :data:`.inference.BINARY_SKEW` for
    the binary fits.

    A design whose rows stay on a Dask DataFrame's partitions (``design.X`` None) gets batches dealt row by row
    and summed on the workers (dpstats/mechanisms/tukey/dealt.py), not jackknifed: ``jackknife=None`` is False
    there, decided by that public fact alone, and ``jackknife=True`` is refused before a sum is read."""
    dealt = design.X is None
    if dealt and jackknife:
        raise ValueError(DEALT_JACKKNIFE)
    jackknife = not dealt if jackknife is None else bool(jackknife)
    n, d = design.n, design.n_columns
    binary = link is not None
    if skew is None:
        skew = inference.BINARY_SKEW if binary else inference.SKEW
    share = privacy.share(inference.default_share(n, d, privacy.eps, privacy.delta, m, binary))
    point_privacy = PrivacyRequest(privacy.eps * (1.0 - share), privacy.delta)
    rule = "given" if m is not None else "default"
    units = design.units
    m = int(m) if m is not None else models_for(n, d, point_privacy.eps, privacy.delta, units, binary)
    check_models(n, d, m, units)
    if dealt:
        models = dealt_models(design, m, rng)
    elif units is None:
        models = partition_models(design.X, design.y, m, rng, batch_fit(q, jackknife, link), design.weights)
    else:
        fits = batch_fit(q, jackknife, link)
        models = unit_partition_models(design.X, design.y, units.codes, units.count, m, rng, fits)
    point, stats, info = release_from_models(models, point_privacy, rng)
    info = {"m": m, "m rule": rule, "rows per model": n // m, "jackknife": jackknife, **info}
    if dealt:
        info = {**info, "batches": DEALT if units is None else DEALT_UNITS.format(unit=units.name, count=units.count)}
    if units is not None:
        info = {**info, f"{units.name}s per model": units.count // m}
    spent = privacy_spent(privacy, share, d)
    note = SE_NOTE if share > 0 else (NO_SE_NOTE if privacy.se_share == 0 else UNAFFORDABLE_NOTE)
    if point is None:
        return failed_release(d, spent, info.pop("reason"), note, noisy_stats=stats, hyperparameters=info)
    if binary and np.max(np.abs(point)) > EXTREME:  # post-processing of the released point
        return failed_release(d, spent, SEPARATED, note, noisy_stats=stats, hyperparameters=info)
    if share == 0:
        return Release(point, np.full((d, d), np.nan), spent, note, noisy_stats=stats, hyperparameters=info)
    eps_spread = inference.share_per_coordinate(privacy.eps, share, d)
    log_spreads = inference.release_spreads(rng, models, point, eps_spread)
    stats = {**stats, "log spread of the models (noisy)": log_spreads}
    law = inference.spread_law(
        log_spreads,
        m,
        inference.degrees_of_freedom(n, m, d),
        info["t"],
        point_privacy.eps / 4,
        eps_spread,
        inference.SkewAllowance(float(skew), n // m),
    )
    stats = {**stats, "skew allowance": law.allowance}
    replicates = law.replicates(noise.postprocessing_rng(rng), point)
    return Release(point, law.cov, spent, note, noisy_stats=stats, hyperparameters=info, replicates=replicates)


EXTREME = MODEL_LIMIT * 1e-50
"""A released point beyond this in some coordinate stands on the failed batches' extremes (logit_models.py)."""
SEPARATED = (
    "the depth median landed on the extremes that stand for batches without a finite MLE: too many batches "
    "were separated (a rare outcome or level among too few rows a batch); declare fewer columns or use "
    "method='newton' or 'histogram'"
)


def batch_fit(q: float | None, jackknife: bool, link: str | None = None) -> BatchFit:
    """What each batch fits: the bias-corrected MLE of ``link``, the q-th quantile regression, else OLS,
    jackknifed when ``jackknife``."""
    if link is not None:
        return glm_batch_fit(link)
    if q is not None:
        return quantile_batch_fit(q)
    return batch_ols_jackknife if jackknife else batch_ols


def privacy_spent(privacy: PrivacyRequest, share: float = 0.0, d: int = 0) -> PrivacySpent:
    """The record of the call: (1 - share) eps split equally between the test and the sampler (delta in the test);
    share eps split equally between the d spread releases (pure)."""
    eps = privacy.eps
    point = eps * (1.0 - share)
    split = ((DISTANCE, point / 2), (SAMPLE, point / 2))
    if share > 0:
        split = (*split, *((inference.spread_name(j), eps * share / d) for j in range(d)))
    return PrivacySpent(notion="approx", eps=eps, delta=privacy.delta, split=split)


def release_from_models(
    models: np.ndarray, privacy: PrivacyRequest, rng: np.random.Generator
) -> tuple[np.ndarray | None, dict[str, np.ndarray], dict[str, object]]:
    """Steps 2-4 on the ``(m, d)`` models: the point (None on ⊥), the noisy statistic, and notes.

    This is the mechanism the privacy proof is about (replace one of the m
    points); :func:`fit` adds the data-independent partition in front of it.
    """
    m = models.shape[0]
    eps1 = eps2 = privacy.eps / 2
    beta = eps2 / 2
    t = td.restricted_depth(m)
    P = td.sorted_projections(models)
    distance = td.distance_to_unsafety(td.log_volumes(td.log_side_lengths(P)), t, beta, privacy.delta)
    noisy = laplace_mechanism(rng, float(distance), 1.0, eps1, DISTANCE)  # scale 1/eps1
    threshold = ptr_threshold(eps1, privacy.delta)
    stats = {"PTR distance (noisy)": np.asarray(noisy), "PTR threshold": np.asarray(threshold)}
    info: dict[str, object] = {"t": t}
    if not noisy > threshold:
        return None, stats, {**info, "reason": PTR_FAILED}
    if not td.restricted_mass_is_positive(P, t):  # only when D = 0 passed: probability <= delta
        return None, stats, {**info, "reason": EMPTY_REGION}
    point = exponential_mechanism_point_release(
        rng,
        lambda g: exact_draw.sample_point(g, P, t, beta),
        lambda y: td.depth(P, y),
        1.0,
        eps2,
        SAMPLE,
    )
    return point, stats, info
