"""Privacy budgets: validation, splitting and the record of what a call spent.

Semantics (DESIGN.md section 2): the privacy unit is one row; neighbouring
datasets have the same, public n and differ in one row (replace-one, "bounded"
DP). ``eps`` is the total for a call; a mechanism splits it internally and
reports the split, which always adds up to the ``eps`` the user gave.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

NEIGHBOURS = "replace-one (bounded DP): neighbouring datasets differ in one row; n is public"


def check_eps(eps: object, name: str = "eps") -> float:
    """Validate a privacy parameter: a finite float > 0."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"{name} must be a positive finite number")
    value = float(eps)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number")
    return value


def check_delta(delta: object, name: str = "delta") -> float:
    """Validate delta: a float in [0, 1)."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise TypeError(f"{name} must be a number in [0, 1)")
    value = float(delta)
    if not math.isfinite(value) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1)")
    return value


@dataclass(frozen=True)
class PrivacySpent:
    """What one call spent, under which notion, and how it was split.

    ``notion`` is ``"pure"`` (eps-DP), ``"approx"`` ((eps, delta)-DP) or
    ``"zcdp"`` (rho-zCDP, with the implied (eps, delta) in ``eps``/``delta``).
    ``split`` names each internal release with the part of the budget it used;
    for pure DP its eps add up to ``eps`` by basic composition.
    """

    notion: str
    eps: float
    delta: float = 0.0
    rho: float | None = None
    split: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    neighbours: str = NEIGHBOURS
    caveats: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict:
        """Plain-Python view (for JSON and for R)."""
        return {
            "notion": self.notion,
            "eps": self.eps,
            "delta": self.delta,
            "rho": self.rho,
            "split": dict(self.split),
            "neighbours": self.neighbours,
            "caveats": list(self.caveats),
        }

    def describe(self) -> str:
        """One line such as ``eps = 1 (pure DP)``."""
        if self.notion == "pure":
            return f"eps = {self.eps:g} (pure DP)"
        if self.notion == "approx":
            return f"eps = {self.eps:g}, delta = {self.delta:g} (approximate DP)"
        return f"rho = {self.rho:g} (zCDP; implies eps = {self.eps:g}, delta = {self.delta:g})"


def split_evenly(eps: float, names: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """Split ``eps`` into equal parts, one per name; the parts add up to ``eps``."""
    part = eps / len(names)
    return tuple((name, part) for name in names)
