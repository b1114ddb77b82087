"""Several quantiles from one ``dp_quantreg`` call.

``dp_quantreg(..., q=[0.25, 0.5, 0.75], eps=1)`` fits each quantile with an
equal part of the budget (basic composition: the parts add up to ``eps``) and
returns a :class:`DPQuantileFits`: the per-quantile results (each a
:class:`~dpstats.results.regression.DPRegressionResults` reporting its own part) and the
privacy of the whole call with its split. Everything here is post-processing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pandas as pd

from ..privacy.accounting import PrivacySpent
from .regression import DPRegressionResults


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

    def to_list(self) -> list[DPRegressionResults]:
        """The fits in order of the quantiles (maketables' ETable expands a container by this method)."""
        return list(self.fits)

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
