"""Deterministic sensitivity replay on neighbouring datasets.

docs/PRIVACY_TESTING.md, "An audit that fits in CI", step 1. For every pair
(D, D') and seed, the core mechanism runs on D with the recorder on, then on
D' with the same seed and D's outputs forced (``noise.recording(
forced_outputs=...)``). Both runs then take the same branches and every
release sees the same earlier outputs, so a release whose sensitivity depends
on them (NoisyStats' intercept: ``(1 + |slope|)/n`` given the released slope,
Alabi et al. 2022, proof of Lemma 4) is compared on equal terms.

For every release the replay checks

* ``||value(D) - value(D')|| <= declared sensitivity`` in the release's norm
  (``"l1"`` for the Laplace mechanism), up to a float tolerance;
* the declared sensitivity and eps are the same on both sides (they may
  depend on public information and earlier outputs only: a data-dependent
  sensitivity is a privacy bug);
* the sequence of releases is the same (a branch on the data, rather than on
  the released values, is a privacy bug);
* the final release is the same (everything after the forced noisy releases
  is post-processing);

and reports, per release name, the worst ratio distance / sensitivity over
all pairs. The pairs are adversarial, so the worst ratio must reach 0.9: a
lower figure means either loose pairs or an overstated sensitivity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..mechanisms.base import PrivacyRequest, Release
from ..privacy.noise import NoisyRelease, make_rng
from .neighbours import NeighbourPair
from .runner import CoreMechanism, Forcing, run_recorded


@dataclass(frozen=True)
class ReleaseReplay:
    """The worst case seen for one release name."""

    name: str
    max_ratio: float
    distance: float
    sensitivity: float
    norm: str
    pair: str
    seed: int
    comparisons: int


@dataclass(frozen=True)
class Violation:
    """One failed check: where, which release, and what went wrong."""

    pair: str
    seed: int
    name: str
    message: str

    def __str__(self) -> str:
        return f"[{self.name}] {self.message} (pair: {self.pair}; seed {self.seed})"


@dataclass(frozen=True)
class ReplayReport:
    """Result of :func:`replay`: the worst ratio per release and every violation."""

    releases: Mapping[str, ReleaseReplay]
    violations: tuple[Violation, ...]
    pairs: int
    seeds: tuple[int, ...]

    def ratio(self, name: str) -> float:
        """Worst ``distance / sensitivity`` seen for release ``name``."""
        return self.releases[name].max_ratio

    def as_text(self) -> str:
        """One line per release name, then the violations (at most 20)."""
        lines = [
            f"{r.name}: max ratio {r.max_ratio:.4f} (distance {r.distance:.6g} vs declared {r.norm} "
            f"sensitivity {r.sensitivity:.6g}; {r.comparisons} comparisons; worst pair: {r.pair}, seed {r.seed})"
            for r in self.releases.values()
        ]
        lines += [f"VIOLATION {v}" for v in self.violations[:20]]
        if len(self.violations) > 20:
            lines.append(f"... and {len(self.violations) - 20} more violations")
        return "\n".join(lines)

    def assert_sound(self, min_ratio: float | None = 0.9, names: Iterable[str] | None = None) -> None:
        """Raise AssertionError on any violation, or if a release's worst ratio is below ``min_ratio``.

        ``names`` (default: all releases seen) must all have been observed.
        ``min_ratio=None`` checks soundness only (for pairs known not to be
        worst-case, or a sensitivity known to be loose).
        """
        problems = [str(v) for v in self.violations]
        wanted = list(self.releases) if names is None else list(names)
        for name in wanted:
            if name not in self.releases:
                problems.append(f"[{name}] never released on these pairs and seeds")
            elif min_ratio is not None and self.releases[name].max_ratio < min_ratio:
                problems.append(
                    f"[{name}] the worst pair reaches only {self.releases[name].max_ratio:.4f} of the declared "
                    f"sensitivity (< {min_ratio}): the pairs are not adversarial or the sensitivity is loose"
                )
        if problems:
            raise AssertionError("replay audit failed:\n" + "\n".join(problems) + "\n--\n" + self.as_text())


def assert_replay_sound(
    report: ReplayReport, min_ratio: float | None = 0.9, names: Iterable[str] | None = None
) -> None:
    """Assert-style helper: :meth:`ReplayReport.assert_sound`."""
    report.assert_sound(min_ratio=min_ratio, names=names)


def release_distance(a: np.ndarray, b: np.ndarray, norm: str) -> float:
    """``||a - b||`` in the norm a release declares (``"l1"``, ``"l2"`` or ``"linf"``)."""
    diff = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)).ravel()
    if norm == "l1":
        return float(diff.sum())
    if norm == "l2":
        return float(np.sqrt((diff**2).sum()))
    if norm == "linf":
        return float(diff.max(initial=0.0))
    raise ValueError(f"unknown sensitivity norm {norm!r}")


def _compare(
    log_d: Sequence[NoisyRelease], log_p: Sequence[NoisyRelease], rtol: float, atol: float
) -> tuple[list[tuple[NoisyRelease, float]], list[tuple[str, str]]]:
    """Per-release (release on D, distance) and the (name, message) problems found."""
    compared: list[tuple[NoisyRelease, float]] = []
    problems: list[tuple[str, str]] = []
    names_d, names_p = [r.name for r in log_d], [r.name for r in log_p]
    if names_d != names_p:
        problems.append(("<sequence>", f"release sequence differs given equal outputs: D {names_d} vs D' {names_p}"))
    for a, b in zip(log_d, log_p, strict=False):
        if a.name != b.name:
            break
        if a.norm != b.norm or a.eps != b.eps:
            problems.append((a.name, f"norm/eps differ between neighbours: {a.norm}/{a.eps} vs {b.norm}/{b.eps}"))
        if not np.isclose(a.sensitivity, b.sensitivity, rtol=rtol, atol=atol):
            problems.append(
                (a.name, f"declared sensitivity depends on the data: {a.sensitivity!r} vs {b.sensitivity!r}")
            )
        if np.shape(a.value) != np.shape(b.value):
            problems.append((a.name, f"shape differs: {np.shape(a.value)} vs {np.shape(b.value)}"))
            continue
        if not (np.all(np.isfinite(a.value)) and np.all(np.isfinite(b.value))):
            problems.append((a.name, "a non-finite value was handed to the noise primitive"))
            continue
        distance = release_distance(a.value, b.value, a.norm)
        if distance > a.sensitivity * (1.0 + rtol) + atol:
            problems.append((a.name, f"distance {distance:.9g} exceeds the declared sensitivity {a.sensitivity:.9g}"))
        compared.append((a, distance))
    return compared, problems


def _same_release(a: Release, b: Release, rtol: float) -> bool:
    """Two releases agree on every output (NaN equal to NaN)."""

    def close(x, y) -> bool:
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        return x.shape == y.shape and bool(np.allclose(x, y, rtol=rtol, atol=0.0, equal_nan=True))

    if not isinstance(a, Release) or not isinstance(b, Release):
        return a is b or a == b
    stats_a, stats_b = dict(a.noisy_stats), dict(b.noisy_stats)
    return (
        a.failed == b.failed
        and a.reason == b.reason
        and close(a.params, b.params)
        and close(a.cov, b.cov)
        and (a.replicates is None) == (b.replicates is None)
        and (a.replicates is None or close(a.replicates, b.replicates))
        and a.interval == b.interval
        and stats_a.keys() == stats_b.keys()
        and all(close(stats_a[k], stats_b[k]) for k in stats_a)
        and a.privacy == b.privacy
    )


def replay(
    fit: CoreMechanism,
    pairs: Iterable[NeighbourPair],
    privacy: PrivacyRequest,
    *,
    seeds: Iterable[int] = range(5),
    options: Mapping[str, object] | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    check_outputs: bool = True,
) -> ReplayReport:
    """Replay ``fit`` on every pair and seed; see the module docstring.

    With ``check_outputs`` the final :class:`~dpstats.mechanisms.base.Release`
    must also be the same on D and D': once every noisy release is forced,
    the rest of the mechanism is post-processing (docs/DESIGN.md section 1), so a
    difference means the data reach the output some other way (an
    unrecorded private step, or raw data used after the noisy statistics).

    Several seeds per pair matter when a release's sensitivity depends on
    earlier outputs (the intercept's worst pair depends on the sign of the
    released slope) or when a run can fail before a release (NoisyStats' ⊥).
    Each pair is used as given; add :meth:`NeighbourPair.swapped` pairs for the
    other direction (the corner generators already list both).
    """
    seeds = tuple(int(s) for s in seeds)
    best: dict[str, ReleaseReplay] = {}
    counts: dict[str, int] = {}
    violations: list[Violation] = []
    n_pairs = 0
    for pair in pairs:
        n_pairs += 1
        for seed in seeds:
            out_d, log_d = run_recorded(fit, pair.d, privacy, make_rng(seed), options=options)
            forced = [r.noisy for r in log_d]
            out_p, log_p = run_recorded(
                fit, pair.d_prime, privacy, make_rng(seed), forcing=Forcing(forced), options=options
            )
            compared, problems = _compare(log_d, log_p, rtol, atol)
            if check_outputs and out_d is not None and out_p is not None and not _same_release(out_d, out_p, rtol):
                problems.append(
                    (
                        "<output>",
                        "the final release differs although every noisy release was forced: the data reach "
                        "the output outside the recorded noise primitives",
                    )
                )
            violations += [Violation(pair.label, seed, name, message) for name, message in problems]
            for release, distance in compared:
                counts[release.name] = counts.get(release.name, 0) + 1
                if release.sensitivity > 0:
                    ratio = distance / release.sensitivity
                else:
                    ratio = 0.0 if distance == 0 else float("inf")
                current = best.get(release.name)
                if current is None or ratio > current.max_ratio:
                    best[release.name] = ReleaseReplay(
                        release.name, ratio, distance, release.sensitivity, release.norm, pair.label, seed, 0
                    )
    releases = {
        name: ReleaseReplay(r.name, r.max_ratio, r.distance, r.sensitivity, r.norm, r.pair, r.seed, counts[name])
        for name, r in best.items()
    }
    return ReplayReport(releases=releases, violations=tuple(violations), pairs=n_pairs, seeds=seeds)
