"""Average marginal effects of a binary-response fit, in the layout of statsmodels' ``get_margeff``.

statsmodels' ``LogitResults.get_margeff(at="overall", method="dydx")``
averages ``d F(x'theta) / d x_j = f(x'theta) theta_j`` over the sample's rows,
every column (dummies too, ``dummy=False``) taken as continuous: the effect of
column j is ``theta_j s`` with ``s = mean_i f(x_i'theta)``. Its standard errors
are the delta method's, ``J cov(theta) J'`` with
``J_jk = 1(j = k) s + theta_j g_k`` and ``g_k = mean_i f'(x_i'theta) x_ik``.
A DP fit has ``s`` and ``g`` from their own release at the released
coefficients (dpstats/glm/at_fit.py); the noise of ``s`` adds
``var(s) theta theta'``. Everything here is post-processing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..glm.at_fit import AtFit
from ..uncertainty.intervals import check_alpha


@dataclass(frozen=True)
class DPMargins:
    """Average marginal effects (``margeff``) with their covariance, statsmodels' names and frame."""

    link: str
    terms: tuple[str, ...]
    margeff: np.ndarray
    margeff_cov: np.ndarray
    method: str = "dydx"
    at: str = "overall"

    @classmethod
    def of(cls, link: str, term_names: Sequence[str], params: np.ndarray, cov: np.ndarray, at_fit: AtFit) -> DPMargins:
        """The effects of every column but the intercept (module docstring)."""
        slopes = [j for j, name in enumerate(term_names) if name != "Intercept"]
        theta = np.asarray(params, dtype=float)
        s, g = at_fit.density_mean, at_fit.slope_means
        jacobian = s * np.eye(theta.size) + np.outer(theta, g)
        full = jacobian @ np.asarray(cov, dtype=float) @ jacobian.T + at_fit.density_noise_var * np.outer(theta, theta)
        index = np.ix_(slopes, slopes)
        return cls(link, tuple(term_names[j] for j in slopes), theta[slopes] * s, full[index])

    @property
    def margeff_se(self) -> np.ndarray:
        """Standard errors of the effects."""
        return np.sqrt(np.diag(self.margeff_cov))

    @property
    def tvalues(self) -> np.ndarray:
        """The effects over their standard errors."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.margeff / self.margeff_se

    @property
    def pvalues(self) -> np.ndarray:
        """Two-sided normal p-values."""
        return 2.0 * stats.norm.sf(np.abs(self.tvalues))

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Normal intervals at level ``1 - alpha``: ``(k, 2)``."""
        z = stats.norm.ppf(1.0 - check_alpha(alpha) / 2.0)
        return np.column_stack([self.margeff - z * self.margeff_se, self.margeff + z * self.margeff_se])

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """statsmodels' ``DiscreteMargins.summary_frame`` columns (its spelling of the upper bound included)."""
        ci = self.conf_int(alpha)
        return pd.DataFrame(
            {
                "dy/dx": self.margeff,
                "Std. Err.": self.margeff_se,
                "z": self.tvalues,
                "Pr(>|z|)": self.pvalues,
                "Conf. Int. Low": ci[:, 0],
                "Cont. Int. Hi.": ci[:, 1],
            },
            index=list(self.terms),
        )

    def summary(self, alpha: float = 0.05) -> str:
        """A text table like statsmodels' margins summary."""
        title = f"DP {self.link.capitalize()} Marginal Effects (method: {self.method}, at: {self.at})"
        return f"{title}\n{self.summary_frame(alpha).to_string(float_format=lambda v: f'{v:.4g}')}"

    def __str__(self) -> str:
        return self.summary()
