"""A survey's public sampling structure: its primary sampling units (PSUs) nested in strata.

``dp_ols(..., weights="wt", cluster="psu", strata="stratum")`` declares the design
as R's ``svydesign(ids = ~psu, strata = ~stratum, weights = ~wt, nest = TRUE)`` does:
a PSU is a pair (stratum, cluster), and the declared levels of both columns fix
every PSU there can be (dpstats/frontend/survey.py). The list of PSUs is therefore
public (a survey publishes its strata and PSU codes, NHANES' SDMVSTRA and SDMVPSU);
which PSU a row is in is private, like any other cell of the row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PSUs:
    """The PSU of every row (``codes`` in 0..count-1) and the stratum of every PSU (public).

    ``cluster`` and ``strata`` are the declared columns' names (``strata`` None: one stratum). With
    ``cluster`` None the rows are the PSUs, within the strata (``svydesign(ids = ~1, strata = ~st)``):
    ``codes`` is then every row's stratum, and ``stratum`` numbers the strata.
    """

    codes: np.ndarray
    stratum: np.ndarray
    cluster: str | None
    strata: str | None = None

    @property
    def count(self) -> int:
        """The number of declared PSUs (of strata, where the rows are the PSUs)."""
        return int(self.stratum.size)

    def subset(self, rows: slice | np.ndarray) -> PSUs:
        """The PSUs of some of the rows (the declared structure unchanged)."""
        return PSUs(self.codes[rows], self.stratum, self.cluster, self.strata)

    @property
    def description(self) -> str:
        """How the standard errors name the design: ``"31 PSUs (psu within strata stratum)"``."""
        if self.cluster is None:
            return f"rows as PSUs within {self.count} strata ({self.strata})"
        within = "" if self.strata is None else f" within strata {self.strata}"
        return f"{self.count} PSUs ({self.cluster}{within})"
