"""Privacy audit harness for the core mechanisms (docs/PRIVACY_TESTING.md, "An audit that fits in CI").

Works on a core mechanism ``fit(design, privacy, rng, **options) -> Release``
and on :class:`~dpstats.design.matrix.Design` objects (not the formula front end),
using the noise recorder of dpstats/privacy/noise.py:

* :mod:`.neighbours` -- worst-case replace-one pairs on the declared box, and
  :func:`design_from_arrays` to build designs for tests (step 1);
* :mod:`.replay` -- same-seed, output-forced replay: every release's value
  moves by at most its declared sensitivity, and the worst pair reaches it
  (step 1);
* :mod:`.goodness_of_fit` -- KS tests of the samplers against their exact
  CDFs, with the power check at eps x 0.7 and x 1.3 (step 2);
* :mod:`.graybox` -- Clopper-Pearson lower bound on the eps of one internal
  release (step 3);
* :mod:`.canaries` -- broken variants the audits must flag (step 5);
* :mod:`.runner` -- the plumbing: forcing, stopping and batching runs.
"""

from __future__ import annotations

from .canaries import scaled_return, understated_sensitivity, weaker_noise
from .goodness_of_fit import (
    KSResult,
    SamplerAudit,
    audit_sampler,
    intervals_cdf,
    intervals_probabilities,
    ks_check,
    repeat_draws,
)
from .graybox import (
    EpsBound,
    GrayBoxResult,
    GrayBoxSamples,
    claimed_eps,
    clopper_pearson_lower,
    clopper_pearson_upper,
    collect_graybox_samples,
    eps_lower_bound,
    graybox_audit,
    reference_prefix,
)
from .neighbours import (
    NeighbourPair,
    box_corners,
    corner_pairs,
    design_from_arrays,
    design_from_points,
    diagonal_pair,
    pair_from_points,
)
from .replay import ReleaseReplay, ReplayReport, Violation, assert_replay_sound, release_distance, replay
from .runner import (
    BatchingGenerator,
    CoreMechanism,
    Forcing,
    NotBatchable,
    StopRun,
    find_release,
    run_recorded,
)

__all__ = [
    "BatchingGenerator",
    "CoreMechanism",
    "EpsBound",
    "Forcing",
    "GrayBoxResult",
    "GrayBoxSamples",
    "KSResult",
    "NeighbourPair",
    "NotBatchable",
    "ReleaseReplay",
    "ReplayReport",
    "SamplerAudit",
    "StopRun",
    "Violation",
    "assert_replay_sound",
    "audit_sampler",
    "box_corners",
    "claimed_eps",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "collect_graybox_samples",
    "corner_pairs",
    "design_from_arrays",
    "design_from_points",
    "diagonal_pair",
    "eps_lower_bound",
    "find_release",
    "graybox_audit",
    "intervals_cdf",
    "intervals_probabilities",
    "ks_check",
    "pair_from_points",
    "reference_prefix",
    "release_distance",
    "repeat_draws",
    "replay",
    "run_recorded",
    "scaled_return",
    "understated_sensitivity",
    "weaker_noise",
]
