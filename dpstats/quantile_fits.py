"""Several quantiles from one ``dp_quantreg`` call, and the validation of ``q``.

``dp_quantreg(..., q=[0.25, 0.5, 0.75], eps=1)`` fits each quantile with an
equal part of the budget (basic composition: the parts add up to ``eps``) and
returns a :class:`DPQuantileFits`: the per-quantile results (each a
:class:`~dpstats.results.DPRegressionResults` reporting its own part) and the
privacy of the whole call with its split. Everything here is post-processing.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .privacy import PrivacySpent
from .results import DPRegressionResults


def check_quantile(q: object) -> float:
    """One quantile: a number strictly between 0 and 1 (every quantile-regression mechanism checks it)."""
    if isinstance(q, bool | np.bool_) or not isinstance(q, numbers.Real) or not 0.0 < float(q) < 1.0:
        raise ValueError("q must be a number in (0, 1) or a list of such numbers")
    return float(q)


def check_quantiles(q: object) -> float | tuple[float, ...]:
    """``q`` as a float, or as a tuple of distinct floats in (0, 1) (order kept)."""
    if isinstance(q, Sequence | np.ndarray | pd.Series) and not isinstance(q, str | bytes):
        values = tuple(check_quantile(v) for v in np.asarray(q, dtype=object).ravel())
        if not values:
            raise ValueError("q must not be an empty list")
        if len(set(values)) != len(values):
            raise ValueError("q has duplicated quantiles; each quantile is fitted once")
        return values[0] if len(values) == 1 else values
    return check_quantile(q)


@dataclass(frozen=True)
class DPQuantileFits:
    """The fits of several quantiles from one call; ``privacy`` is the whole call's spend."""

    quantiles: tuple[float, ...]
    fits: tuple[DPRegressionResults, ...]
    privacy: PrivacySpent

    def __len__(self) -> int:
        return len(self.fits)

    def __iter__(self) -> Iterator[DPRegressionResults]:
        return iter(self.fits)

    def __getitem__(self, q: float) -> DPRegressionResults:
        """The fit of quantile ``q``."""
        for tau, fit in zip(self.quantiles, self.fits, strict=True):
            if tau == q:
                return fit
        raise KeyError(f"q={q!r} was not fitted (fitted: {list(self.quantiles)})")

    @property
    def params(self) -> pd.DataFrame:
        """Estimates: one row per term, one column per quantile."""
        return pd.DataFrame({tau: fit.params for tau, fit in zip(self.quantiles, self.fits, strict=True)})

    def tidy(self, conf_int: bool = True, conf_level: float = 0.95) -> pd.DataFrame:
        """broom's tidy frame of every fit, with a column ``q``."""
        frames = [
            fit.tidy(conf_int, conf_level).assign(q=tau) for tau, fit in zip(self.quantiles, self.fits, strict=True)
        ]
        return pd.concat(frames, ignore_index=True)

    def glance(self) -> pd.DataFrame:
        """One row per quantile (``eps`` is each fit's part of the budget)."""
        frames = [fit.glance().assign(q=tau) for tau, fit in zip(self.quantiles, self.fits, strict=True)]
        return pd.concat(frames, ignore_index=True)

    def as_text(self) -> str:
        """The call's privacy and split, then every fit's summary."""
        split = ", ".join(f"{name}: {part:.4g}" for name, part in self.privacy.split)
        head = f"{len(self.fits)} quantiles, {self.privacy.describe()} in total; budget split: {split}"
        return "\n\n".join([head, *(fit.summary().as_text() for fit in self.fits)])

    def to_dict(self) -> dict:
        """Plain-Python view: the call's privacy and each fit's ``to_dict()``."""
        return {
            "quantiles": list(self.quantiles),
            "privacy": self.privacy.as_dict(),
            "fits": [fit.to_dict() for fit in self.fits],
        }

    def __str__(self) -> str:
        return self.as_text()
