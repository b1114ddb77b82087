"""auto's rule for a binary-response model (``dp_logit``, ``dp_probit``), from public facts only.

The error model of dpstats/planning/error_model.py is calibrated on
least-squares and quantile designs; its binary table is not built yet, so a
binary call chooses by a fixed rule and makes no prediction (its summary says
so):

* with ``delta > 0`` and at least ``TUKEY_ROWS_PER_COLUMN`` rows per design
  column, Tukey depth over batch MLEs (Amin et al. 2023): each batch's model
  is a full-sample MLE's estimand, so its point and intervals carry no
  binning bias;
* otherwise the perturbed histogram (Lei 2011, section 3.1), pure and proven.

Objective perturbation and KNG sample continuous laws in floating point
(their releases are not proven, dpstats/privacy/noise.py's ``FLOAT_CAVEAT``):
auto never chooses them.
"""

from __future__ import annotations

from collections.abc import Collection

from .facts import PublicFacts
from .selection import Choice

TUKEY_ROWS_PER_COLUMN = 500
"""Rows per design column below which Tukey's batches are too small for their MLEs (separation)."""


def choose_binary(facts: PublicFacts, allowed: Collection[str] | None = None) -> Choice:
    """The mechanism for a binary-response call (module docstring), among ``allowed`` (None: all)."""
    columns = facts.slopes + int(facts.intercept)
    tukey_ok = allowed is None or "tukey" in allowed
    if facts.delta > 0 and tukey_ok and facts.n >= TUKEY_ROWS_PER_COLUMN * columns:
        reason = (
            f"delta > 0 and {facts.n} rows for {columns} columns: Tukey depth over batch MLEs, whose intervals "
            "carry no binning bias (the binary rule of dpstats/planning/binary_choice.py; no calibrated prediction)"
        )
        return Choice("tukey", {}, reason, (), ())
    if allowed is not None and "histogram" not in allowed:
        raise ValueError(f"no mechanism among {sorted(allowed)} fits a binary response here")
    reason = (
        "the perturbed histogram (Lei 2011, section 3.1), pure and proven (the binary rule of "
        "dpstats/planning/binary_choice.py; no calibrated prediction)"
    )
    return Choice("histogram", {}, reason, (), ())
