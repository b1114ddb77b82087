"""Gray-box neighbour audit: an empirical lower bound on the eps of one internal release.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", step 3. The end-to-end
estimate hides bugs (checking only the final slope missed a 2x bug in
NoisyStats), so the audit looks inside: it samples the noisy output of one
named release (a :class:`~dpstats.privacy.noise.NoisyRelease`) many times on D and
on D', reduces a vector output to a scalar by projecting it on
``sign(value(D) - value(D'))``, and bounds the privacy loss of one event:

1. the event (``output > t`` or its complement, for a threshold ``t``; or
   "release missing" when a run can stop before it) and its direction
   (D against D', or D' against D) are chosen on the first half of the
   samples;
2. on the second half, one-sided Clopper-Pearson bounds at level ``alpha/2``
   each give ``eps_lb = ln((p_lo - delta) / q_hi)``.

If the release really is (eps, delta)-DP, ``p <= e^eps q + delta`` for every
event, so ``eps_lb > eps`` needs ``p_lo > p`` or ``q_hi < q``: probability at
most ``alpha``. That is the false-failure probability of the assertion
``eps_lb <= eps`` for one audit.

Earlier releases are forced to one fixed set of outputs on both sides
(``forced="reference"``): a release's budget in the composition proof is its
eps *given* the earlier outputs (NoisyStats' intercept, Alabi et al. 2022,
proof of Lemma 4), so that is the claim audited.

Two engines produce the samples (dpstats/audit/runner.py):

* ``"runs"``: the core mechanism is run ``runs`` times per side with
  independent randomness, stopped right after the audited release;
* ``"batched"``: one run per side (same seed on both, so any randomness
  before the release is coupled) in which the audited release's draws come
  back ``runs`` at a time from an independent generator per side, so the
  noise primitive computes all ``value + noise`` outputs in one call. It conditions on any
  randomness drawn before the release (fine for composition-based proofs,
  not for privacy amplification by subsampling) and works for additive
  (location-scale) noise only;
* ``"auto"`` (default) uses ``"batched"`` and falls back to ``"runs"`` when
  the release cannot be batched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from ..design.matrix import Design
from ..mechanisms.base import PrivacyRequest
from ..privacy.noise import NoisyRelease, independent_rngs, make_rng
from .neighbours import NeighbourPair
from .runner import BatchingGenerator, CoreMechanism, Forcing, NotBatchable, find_release, run_recorded

Engine = Literal["auto", "batched", "runs"]


# --------------------------------------------------------------------------
# Clopper-Pearson and the event search
# --------------------------------------------------------------------------


def clopper_pearson_lower(k: np.ndarray | int, n: np.ndarray | int, level: float) -> np.ndarray:
    """One-sided lower confidence bound for a binomial proportion: P(bound > p) <= level."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    safe = np.maximum(k, 1.0)
    return np.where(k > 0, stats.beta.ppf(level, safe, n - safe + 1.0), 0.0)


def clopper_pearson_upper(k: np.ndarray | int, n: np.ndarray | int, level: float) -> np.ndarray:
    """One-sided upper confidence bound for a binomial proportion: P(bound < p) <= level."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    safe = np.minimum(k, n - 1.0)
    return np.where(k < n, stats.beta.ppf(1.0 - level, safe + 1.0, n - safe), 1.0)


def _log_ratio(p_lo: np.ndarray, q_hi: np.ndarray, delta: float) -> np.ndarray:
    num = np.asarray(p_lo) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.where(num > 0, num, np.nan) / q_hi)
    return np.where(np.isfinite(out), out, -np.inf)


@dataclass(frozen=True)
class EpsBound:
    """An empirical lower bound on eps from one event, evaluated on held-out samples."""

    eps_lb: float
    event: str
    direction: str
    p_hat: float
    q_hat: float
    p_lo: float
    q_hi: float
    sizes: tuple[int, int]
    alpha: float
    delta: float


def _counts(samples: np.ndarray, kinds: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many samples fall in each event; kinds 0: > t, 1: <= t or missing, 2: missing, 3: not missing."""
    finite = np.sort(samples[~np.isnan(samples)])
    n, n_missing = samples.size, samples.size - finite.size
    above = finite.size - np.searchsorted(finite, thresholds, side="right")
    return np.select([kinds == 0, kinds == 1, kinds == 2], [above, n - above, n_missing], n - n_missing)


def _describe(kind: int, threshold: float) -> str:
    return ("output > {t:.6g}", "output <= {t:.6g} or missing", "release missing", "release made")[kind].format(
        t=threshold
    )


def eps_lower_bound(
    samples_d: np.ndarray,
    samples_dp: np.ndarray,
    *,
    alpha: float = 1e-6,
    delta: float = 0.0,
    thresholds: int = 256,
) -> EpsBound:
    """Clopper-Pearson lower bound on eps from scalar samples on D and D' (NaN = release missing).

    The event and direction are chosen on the first half of each sample, the
    bound is computed on the second half; ``P(eps_lb > true eps) <= alpha``.
    A bound of 0 means no evidence of any privacy loss.
    """
    a, b = np.asarray(samples_d, dtype=float).ravel(), np.asarray(samples_dp, dtype=float).ravel()
    if a.size < 4 or b.size < 4:
        raise ValueError("need at least 4 samples on each side")
    a1, a2 = a[: a.size // 2], a[a.size // 2 :]
    b1, b2 = b[: b.size // 2], b[b.size // 2 :]
    level = alpha / 2.0

    pooled = np.concatenate([a1, b1])
    pooled = pooled[~np.isnan(pooled)]
    cuts = np.unique(np.quantile(pooled, (np.arange(thresholds) + 0.5) / thresholds)) if pooled.size else np.zeros(0)
    kinds = np.concatenate([np.zeros(cuts.size, int), np.ones(cuts.size, int), [2, 3]])
    ts = np.concatenate([cuts, cuts, [np.nan, np.nan]])

    ka, kb = _counts(a1, kinds, ts), _counts(b1, kinds, ts)
    forward = _log_ratio(clopper_pearson_lower(ka, a1.size, level), clopper_pearson_upper(kb, b1.size, level), delta)
    backward = _log_ratio(clopper_pearson_lower(kb, b1.size, level), clopper_pearson_upper(ka, a1.size, level), delta)
    scores = np.concatenate([forward, backward])
    best = int(np.argmax(scores))
    swapped = best >= kinds.size
    event = best % kinds.size

    kind, t = np.array([kinds[event]]), np.array([ts[event]])
    ka2, kb2 = int(_counts(a2, kind, t)[0]), int(_counts(b2, kind, t)[0])
    (kp, np_), (kq, nq) = ((kb2, b2.size), (ka2, a2.size)) if swapped else ((ka2, a2.size), (kb2, b2.size))
    p_lo = float(clopper_pearson_lower(kp, np_, level))
    q_hi = float(clopper_pearson_upper(kq, nq, level))
    value = float(_log_ratio(np.array(p_lo), np.array(q_hi), delta))
    return EpsBound(
        eps_lb=max(value, 0.0),
        event=_describe(int(kind[0]), float(t[0])),
        direction="D' against D" if swapped else "D against D'",
        p_hat=kp / np_,
        q_hat=kq / nq,
        p_lo=p_lo,
        q_hi=q_hi,
        sizes=(np_, nq),
        alpha=alpha,
        delta=delta,
    )


# --------------------------------------------------------------------------
# Sampling one release
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class GrayBoxSamples:
    """Noisy outputs of one release on D and on D' (rows = runs; NaN rows = release missing)."""

    name: str
    index: int
    eps: float
    rho: float | None
    value_d: np.ndarray
    value_dp: np.ndarray
    noisy_d: np.ndarray
    noisy_dp: np.ndarray
    engine: str

    def direction(self) -> np.ndarray:
        """``sign(value(D) - value(D'))``, flattened (the first axis if the values agree)."""
        w = np.sign(np.asarray(self.value_d, float) - np.asarray(self.value_dp, float)).ravel()
        if not np.any(w):
            w = np.zeros(max(w.size, 1))
            w[0] = 1.0
        return w

    def projected(self) -> tuple[np.ndarray, np.ndarray]:
        """Scalar samples: each output projected on :meth:`direction` (the default reduction)."""
        w = self.direction()
        return self._flat(self.noisy_d) @ w, self._flat(self.noisy_dp) @ w

    def laplace_log_likelihood_ratio(self) -> tuple[np.ndarray, np.ndarray]:
        """Scalar samples: ``sum_j |z_j - value(D')_j| - |z_j - value(D)_j|``.

        Up to the common factor 1/scale this is the log-likelihood ratio of
        i.i.d. Laplace noise on every coordinate, the most powerful statistic
        for an L1 release (Neyman-Pearson); on a vector release it keeps far
        more of the privacy loss than the sign projection. It uses the
        recorded values only (gray-box), not the declared scale.

        Each term is computed as ``clip(s (a + b - 2 z), -|a - b|, |a - b|)``
        (``a``, ``b`` the values on D and D', ``s = sign(b - a)``), so that its
        two atoms are exactly ``+-|a - b|`` whatever ``z``: the naive
        difference of absolute values rounds differently on the two sides and
        a threshold placed inside an atom then "detects" the rounding -- a
        spurious eps_lb of 5 on a correct mechanism.
        """
        a, b = self.value_d.ravel(), self.value_dp.ravel()
        width, s = np.abs(a - b), np.sign(b - a)

        def llr(noisy: np.ndarray) -> np.ndarray:
            terms = np.clip(s * (a + b - 2.0 * self._flat(noisy)), -width, width)
            return terms.sum(axis=1)

        return llr(self.noisy_d), llr(self.noisy_dp)

    def gaussian_log_likelihood_ratio(self) -> tuple[np.ndarray, np.ndarray]:
        """Scalar samples: each output projected on ``value(D) - value(D')``.

        The log-likelihood ratio of i.i.d. Gaussian noise is affine in this
        projection, so it is the most powerful statistic for an L2 release.
        """
        w = (np.asarray(self.value_d, float) - np.asarray(self.value_dp, float)).ravel()
        return self._flat(self.noisy_d) @ w, self._flat(self.noisy_dp) @ w

    def corner_event(self) -> tuple[np.ndarray, np.ndarray]:
        """Scalar samples: ``min_j`` of the output's signed distance past the midpoint of ``value(D)`` and
        ``value(D')``, towards D: large only when every coordinate is (a corner of a vector release)."""
        w = np.sign(self.value_d - self.value_dp)
        mid = (self.value_d + self.value_dp) / 2
        return ((self.noisy_d - mid) * w).min(axis=1), ((self.noisy_dp - mid) * w).min(axis=1)

    @staticmethod
    def _flat(noisy: np.ndarray) -> np.ndarray:
        return noisy.reshape(noisy.shape[0], -1)


def _budget(release: NoisyRelease) -> tuple[float, float | None]:
    """The (eps, rho) a release declares (rho: zCDP releases such as the Gaussian mechanism)."""
    return float(release.eps), getattr(release, "rho", None)


def claimed_eps(eps: float, rho: float | None, delta: float) -> float:
    """The eps a release claims at ``delta``: its own eps, or for rho-zCDP ``rho + 2 sqrt(rho ln(1/delta))``.

    The zCDP conversion is Bun & Steinke 2016, Proposition 1.3; without a
    positive delta a zCDP release claims no finite eps (returns inf).
    """
    if np.isfinite(eps) or rho is None:
        return float(eps)
    if delta <= 0:
        return float("inf")
    return float(rho + 2.0 * np.sqrt(rho * np.log(1.0 / delta)))


def reference_prefix(
    fit: CoreMechanism,
    design: Design,
    privacy: PrivacyRequest,
    name: str,
    *,
    seed: int = 0,
    attempts: int = 1000,
    occurrence: int = 0,
    options: Mapping[str, object] | None = None,
) -> tuple[int, list[np.ndarray]]:
    """The index of release ``name`` and the outputs before it, from the first seeded run on D that makes it."""
    for s in range(seed, seed + attempts):
        _, log = run_recorded(fit, design, privacy, make_rng(s), options=options)
        index = find_release(log, name, occurrence)
        if index is not None:
            return index, [r.noisy for r in log[:index]]
    raise ValueError(f"release {name!r} was not made in {attempts} runs on D")


def _locate(
    fit: CoreMechanism,
    pair: NeighbourPair,
    privacy: PrivacyRequest,
    name: str,
    forced: Sequence[np.ndarray | None] | Literal["reference"] | None,
    seed: int,
    occurrence: int,
    options: Mapping[str, object] | None,
    attempts: int = 1000,
) -> tuple[int, list[np.ndarray | None], NoisyRelease]:
    """Index of the audited release, the prefix to force, and the release from a plain run on D."""
    if isinstance(forced, str):
        if forced != "reference":
            raise ValueError("forced must be 'reference', None or a list of outputs")
        index, prefix = reference_prefix(fit, pair.d, privacy, name, seed=seed, occurrence=occurrence, options=options)
        prefix_list: list[np.ndarray | None] = list(prefix)
        found = seed
    else:
        prefix_list = [None if f is None else np.asarray(f, dtype=float) for f in (forced or [])]
        for found in range(seed, seed + attempts):
            _, log = run_recorded(fit, pair.d, privacy, make_rng(found), forcing=Forcing(prefix_list), options=options)
            index = find_release(log, name, occurrence)
            if index is not None:
                break
        else:
            raise ValueError(f"release {name!r} was not made in {attempts} runs on D with these forced outputs")
        prefix_list = (prefix_list + [None] * index)[:index]
    _, log = run_recorded(fit, pair.d, privacy, make_rng(found), forcing=Forcing(prefix_list, index), options=options)
    if len(log) <= index or log[index].name != name:
        raise ValueError(f"release {name!r} is not reached with the forced outputs")
    return index, prefix_list, log[index]


def _sample_runs(
    fit: CoreMechanism,
    design: Design,
    privacy: PrivacyRequest,
    rng: np.random.Generator,
    name: str,
    index: int,
    prefix: list[np.ndarray | None],
    shape: tuple[int, ...],
    runs: int,
    options: Mapping[str, object] | None,
) -> tuple[np.ndarray, np.ndarray | None, set[tuple[float, float | None]]]:
    noisy = np.full((runs, *shape), np.nan)
    value: np.ndarray | None = None
    eps_seen: set[tuple[float, float | None]] = set()
    forcing = Forcing(prefix, stop_at=index)
    for i in range(runs):
        _, log = run_recorded(fit, design, privacy, rng, forcing=forcing, options=options)
        if len(log) > index and log[index].name == name:
            release = log[index]
            noisy[i] = release.noisy
            eps_seen.add(_budget(release))
            if value is None:
                value = release.value
    return noisy, value, eps_seen


def _sample_batched(
    fit: CoreMechanism,
    design: Design,
    privacy: PrivacyRequest,
    seed: int,
    noise_rng: np.random.Generator,
    name: str,
    index: int,
    prefix: list[np.ndarray | None],
    shape: tuple[int, ...],
    runs: int,
    options: Mapping[str, object] | None,
) -> tuple[np.ndarray, np.ndarray, set[tuple[float, float | None]]]:
    if any(p is None for p in prefix):
        raise NotBatchable("the batched engine needs every release before the audited one forced")
    forcing = Forcing(prefix, stop_at=index)
    proxy = BatchingGenerator(
        make_rng(seed),
        runs,
        active=lambda: forcing.log is not None and len(forcing.log) == index,
        batch_rng=noise_rng,
    )
    with proxy.exact_noise():
        _, log = run_recorded(fit, design, privacy, proxy, forcing=forcing, options=options)
    release = log[index] if len(log) > index else None
    if release is None or release.name != name:
        raise NotBatchable(f"release {name!r} was not reached in the batched run")
    if proxy.batched_calls == 0 or release.noisy.shape != (runs, *shape) or np.shape(release.value) != shape:
        raise NotBatchable(f"release {name!r} did not come back as a batch of value + noise")
    return release.noisy, release.value, {_budget(release)}


def collect_graybox_samples(
    fit: CoreMechanism,
    pair: NeighbourPair,
    privacy: PrivacyRequest,
    name: str,
    *,
    runs: int = 20_000,
    seed: int = 0,
    forced: Sequence[np.ndarray | None] | Literal["reference"] | None = "reference",
    engine: Engine = "auto",
    occurrence: int = 0,
    options: Mapping[str, object] | None = None,
) -> GrayBoxSamples:
    """Sample release ``name`` ``runs`` times on each side of ``pair`` (see the module docstring).

    ``forced``: ``"reference"`` forces every earlier release to the outputs of
    the first seeded run on D that makes the release; a list forces those
    outputs (None entries stay unforced, runs engine only); None forces
    nothing (the audited distribution is then the marginal one, whose eps is
    the composition of everything up to the release).
    """
    index, prefix, reference = _locate(fit, pair, privacy, name, forced, seed, occurrence, options)
    shape = tuple(np.shape(reference.value))
    used = engine
    if engine in ("auto", "batched"):
        noise_d, noise_p = independent_rngs(seed, 2)
        try:
            noisy_d, value_d, eps_d = _sample_batched(
                fit, pair.d, privacy, seed, noise_d, name, index, prefix, shape, runs, options
            )
            noisy_p, value_p, eps_p = _sample_batched(
                fit, pair.d_prime, privacy, seed, noise_p, name, index, prefix, shape, runs, options
            )
            used = "batched"
        except NotBatchable:
            if engine == "batched":
                raise
            used = "runs"
    if used == "runs":
        rng_d, rng_p = independent_rngs(seed, 2)
        noisy_d, value_d, eps_d = _sample_runs(fit, pair.d, privacy, rng_d, name, index, prefix, shape, runs, options)
        noisy_p, value_p, eps_p = _sample_runs(
            fit, pair.d_prime, privacy, rng_p, name, index, prefix, shape, runs, options
        )
    if value_d is None or value_p is None:
        raise ValueError(f"release {name!r} was never made on one side of the pair")
    budgets = eps_d | eps_p
    if len(budgets) != 1:
        raise AssertionError(f"release {name!r} declared different budgets across runs: {sorted(budgets)}")
    eps, rho = budgets.pop()
    return GrayBoxSamples(
        name=name,
        index=index,
        eps=eps,
        rho=rho,
        value_d=np.asarray(value_d, float),
        value_dp=np.asarray(value_p, float),
        noisy_d=noisy_d,
        noisy_dp=noisy_p,
        engine=used,
    )


# --------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class GrayBoxResult:
    """The gray-box audit of one release on one pair."""

    name: str
    pair: str
    eps_claimed: float
    bound: EpsBound
    runs: int
    engine: str

    @property
    def eps_lb(self) -> float:
        """The Clopper-Pearson lower bound on the release's eps."""
        return self.bound.eps_lb

    @property
    def flagged(self) -> bool:
        """True when the audit proves more privacy loss than claimed."""
        return self.eps_lb > self.eps_claimed

    def as_text(self) -> str:
        """One line: the bound, the claim, and the event that gave it."""
        b = self.bound
        return (
            f"{self.name}: eps_lb {b.eps_lb:.3f} vs claimed {self.eps_claimed:.3f} ({self.engine}, {self.runs} runs "
            f"a side; event '{b.event}', {b.direction}: p {b.p_hat:.4f} >= {b.p_lo:.4f}, q {b.q_hat:.4f} "
            f"<= {b.q_hi:.4f}, alpha {b.alpha:g}; pair: {self.pair})"
        )

    def assert_within_claim(self) -> None:
        """Raise AssertionError when ``eps_lb`` exceeds the claimed eps of the release."""
        if self.flagged:
            raise AssertionError("gray-box audit: privacy loss above the claim\n" + self.as_text())


def graybox_audit(
    fit: CoreMechanism,
    pair: NeighbourPair,
    privacy: PrivacyRequest,
    name: str,
    *,
    runs: int = 20_000,
    seed: int = 0,
    alpha: float = 1e-6,
    delta: float = 0.0,
    forced: Sequence[np.ndarray | None] | Literal["reference"] | None = "reference",
    engine: Engine = "auto",
    occurrence: int = 0,
    options: Mapping[str, object] | None = None,
    reduce: Callable[[GrayBoxSamples], tuple[np.ndarray, np.ndarray]] | None = None,
) -> GrayBoxResult:
    """Audit release ``name`` of ``fit`` on ``pair``; ``P(eps_lb > true eps) <= alpha``.

    The claim checked is the release's recorded eps, or for a rho-zCDP
    release (eps recorded as inf) the eps it implies at ``delta``
    (:func:`claimed_eps`); ``delta`` also enters the bound.

    ``reduce`` maps the samples to scalar samples on D and D' (default: the
    projection on ``sign(value(D) - value(D'))``, :meth:`GrayBoxSamples.projected`;
    for vector Laplace releases :meth:`GrayBoxSamples.laplace_log_likelihood_ratio`
    has more power). Any reduction fixed before looking at the samples keeps
    the ``alpha`` guarantee (post-processing cannot increase privacy loss).
    """
    samples = collect_graybox_samples(
        fit,
        pair,
        privacy,
        name,
        runs=runs,
        seed=seed,
        forced=forced,
        engine=engine,
        occurrence=occurrence,
        options=options,
    )
    s_d, s_dp = samples.projected() if reduce is None else reduce(samples)
    bound = eps_lower_bound(s_d, s_dp, alpha=alpha, delta=delta)
    claimed = claimed_eps(samples.eps, samples.rho, delta)
    return GrayBoxResult(name, pair.label, claimed, bound, runs, samples.engine)
