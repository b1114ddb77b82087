"""maketables' plug-in format, so that ``maketables.ETable([...])`` takes dpstats fits next to pyfixest's.

maketables (PyPI; ``pip install "dpstats[maketables]"``) finds the columns of
a model it does not know through ``__maketables_*__`` attributes of the result
class (https://github.com/py-econometrics/maketables/blob/main/PLUGIN_EXTRACTOR_FORMAT.md;
nothing of maketables is imported here). :class:`DPRegressionResults` inherits them from
:class:`MakeTablesPlugin`: the coefficient table (estimate, standard error,
z, p-value and ``conf_int()``'s 95% interval, which is a bootstrap interval
where the release carries replicates), the dependent variable, and the
statistics N (public), eps, delta, rho, method and the standard errors' kind.

maketables 0.2 tries its own extractors before the plug-in, and its
statsmodels extractor claims any object with ``params``, ``bse`` and
``pvalues``: a dpstats fit reaches ETable through it. It reads the same
values (``params``, ``bse``, ``pvalues``, ``tvalues``, ``conf_int()``,
``nobs``) and, for the dependent variable and the "S.E. type" row, the
statsmodels names ``endog_names`` and ``cov_type``, which the mixin provides
too; the privacy rows come from :func:`maketables_rows` through ETable's
``custom_model_stats``. All of it is post-processing of the release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

SE_TYPE = "DP: sampling + privacy noise"
"""What the standard errors cover, as maketables' "S.E. type" row shows it."""

STAT_LABELS = {
    "N": "N (public)",
    "eps": "eps",
    "delta": "delta",
    "rho": "rho",
    "method": "DP method",
    "se_type": "S.E. type",
}


class MakeTablesPlugin:
    """The maketables plug-in attributes of a fit (needs ``params``, ``bse``, ``conf_int``, ``privacy``, ...)."""

    @property
    def __maketables_coef_table__(self) -> pd.DataFrame:
        """Columns b, se, t, p, ci95l, ci95u, indexed by term."""
        res: Any = self
        ci = res.conf_int(0.05)
        return pd.DataFrame(
            {
                "b": res.params,
                "se": res.bse,
                "t": res.tvalues,
                "p": res.pvalues,
                "ci95l": ci["lower"],
                "ci95u": ci["upper"],
            }
        )

    def __maketables_stat__(self, key: str) -> Any:
        """N (public), eps, delta, rho, method, se_type; None for any other key (maketables shows "-")."""
        res: Any = self
        spent = res.privacy
        stats = {
            "N": res.nobs,
            "eps": spent.eps,
            "delta": spent.delta,
            "rho": spent.rho,
            "method": res.method,
            "se_type": SE_TYPE,
        }
        return stats.get(key)

    @property
    def __maketables_depvar__(self) -> str:
        """The dependent variable."""
        res: Any = self
        return res.y_name

    @property
    def __maketables_stat_labels__(self) -> dict[str, str]:
        """Row labels of the statistics."""
        return dict(STAT_LABELS)

    @property
    def __maketables_default_stat_keys__(self) -> list[str]:
        """N, eps (delta and rho where the fit has them), the mechanism and what the standard errors cover."""
        res: Any = self
        spent = res.privacy
        keys = ["N", "eps"]
        if spent.delta > 0:
            keys.append("delta")
        if spent.rho is not None:
            keys.append("rho")
        return [*keys, "method", "se_type"]

    @property
    def endog_names(self) -> str:
        """The dependent variable, under statsmodels' name (read by maketables' statsmodels extractor)."""
        res: Any = self
        return res.y_name

    @property
    def cov_type(self) -> str:
        """What the standard errors cover, under statsmodels' name (maketables' "S.E. type" row)."""
        return SE_TYPE

    @property
    def __maketables_vcov_info__(self) -> dict[str, Any]:
        """The standard errors' kind (they cover sampling error and privacy noise)."""
        return {"vcov_type": SE_TYPE, "clustervar": None}


def maketables_rows(models: Sequence[Any]) -> dict[str, list[str]]:
    """The privacy rows of an ETable, for ``custom_model_stats``: eps (delta, rho where any fit has them), method,
    and the survey-weight column where any fit is weighted.

    ``models`` as given to ETable: fits, and containers such as a
    :class:`~dpstats.results.quantile_fits.DPQuantileFits` (expanded by ``to_list()``,
    as ETable expands them).
    """
    fits = [fit for model in models for fit in (model.to_list() if hasattr(model, "to_list") else [model])]
    rows = {"eps": [f"{fit.privacy.eps:g}" for fit in fits]}
    if any(fit.privacy.delta > 0 for fit in fits):
        rows["delta"] = [f"{fit.privacy.delta:g}" for fit in fits]
    if any(fit.privacy.rho is not None for fit in fits):
        rows["rho"] = ["-" if fit.privacy.rho is None else f"{fit.privacy.rho:g}" for fit in fits]
    rows["DP method"] = [fit.method for fit in fits]
    if any(fit.hyperparameters.get("weights") is not None for fit in fits):
        rows["Weights"] = [str(fit.hyperparameters.get("weights") or "none") for fit in fits]
    return rows
