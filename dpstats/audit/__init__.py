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
* :mod:`.blackbox` -- the same bound on a whole public call (``dp_logit(...,
  random_state=seed)``), from its released numbers only, on neighbouring
  data frames (:mod:`.frame_pairs`: the survey weight's 0 -> W move, and its designs as a call builds
  them, for the replay) (steps 3, 4);
* :mod:`.canaries` -- broken variants the audits must flag (step 5);
* :mod:`.runner` -- the plumbing: forcing, stopping and batching runs.
"""

from __future__ import annotations

from .blackbox import CallSamples, PublicCall, blackbox_audit, discriminant, released_numbers, sample_calls
from .canaries import forced_argument, ignored_weight, scaled_return, understated_sensitivity, weaker_noise
from .frame_pairs import FramePair, as_called, design_pair, weight_move
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
    "CallSamples",
    "CoreMechanism",
    "EpsBound",
    "Forcing",
    "FramePair",
    "GrayBoxResult",
    "GrayBoxSamples",
    "KSResult",
    "NeighbourPair",
    "NotBatchable",
    "PublicCall",
    "ReleaseReplay",
    "ReplayReport",
    "SamplerAudit",
    "StopRun",
    "Violation",
    "as_called",
    "assert_replay_sound",
    "audit_sampler",
    "blackbox_audit",
    "box_corners",
    "claimed_eps",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "collect_graybox_samples",
    "corner_pairs",
    "design_from_arrays",
    "design_from_points",
    "design_pair",
    "diagonal_pair",
    "discriminant",
    "eps_lower_bound",
    "find_release",
    "forced_argument",
    "graybox_audit",
    "ignored_weight",
    "intervals_cdf",
    "intervals_probabilities",
    "ks_check",
    "pair_from_points",
    "reference_prefix",
    "release_distance",
    "released_numbers",
    "repeat_draws",
    "replay",
    "run_recorded",
    "sample_calls",
    "scaled_return",
    "understated_sensitivity",
    "weaker_noise",
    "weight_move",
]
