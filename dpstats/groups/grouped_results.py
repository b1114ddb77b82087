"""DPGroupedResults: one fit per declared group key, and the privacy of the whole call.

Post-processing of the groups' releases only (dpstats/groups/partition.py says how
the budget was divided). ``tidy()`` is the long frame a paper's appendix or a
map needs, one line to write: ``res.tidy().to_parquet("slopes.parquet")``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from ..mechanisms.base import Release
from ..mechanisms.noisystats.grouped_releases import GroupReleases
from ..output.render import Summary
from ..privacy.accounting import PrivacySpent
from ..results.regression import DPRegressionResults
from ..uncertainty import bias as bias_rule
from ..uncertainty.intervals import check_alpha


@dataclass(frozen=True)
class DPGroupedResults:
    """The fits of a grouped call (``by=``, ``groups=``), in the order of the declared keys.

    ``res[key]`` is one group's :class:`~dpstats.results.regression.DPRegressionResults`
    (its ``privacy`` is what that group's mechanism spent, its ``nobs`` the
    rows that mechanism saw: the declared size, or the released noisy size),
    made from that group's release when asked for (``from_release`` with the
    call's public facts in ``context``); ``privacy`` is the whole call, whose
    eps is the eps passed.
    """

    by: str
    keys: tuple
    releases: Sequence[Release] = field(repr=False)
    sizes: tuple[int, ...] = field(repr=False)
    context: Mapping[str, object] = field(repr=False)
    privacy: PrivacySpent
    public_sizes: bool
    per_group: tuple[Mapping[str, object], ...] = field(default=(), repr=False)

    def __getitem__(self, key: object) -> DPRegressionResults:
        try:
            g = self.keys.index(key)
        except ValueError:
            raise KeyError(f"{key!r} is not a declared group") from None
        return self._fit(g)

    def _fit(self, g: int) -> DPRegressionResults:
        context = {**self.context, **self.per_group[g]} if self.per_group else self.context
        return DPRegressionResults.from_release(self.releases[g], nobs=self.sizes[g], **context)

    @property
    def methods(self) -> pd.Series:
        """Each group's mechanism (one name throughout unless a grouped auto chose per group)."""
        names = [c["method"] for c in self.per_group] if self.per_group else [self.context["method"]] * len(self)
        return pd.Series(names, index=self._index(), name="method")

    @cached_property
    def fits(self) -> tuple[DPRegressionResults, ...]:
        """Every group's result, in the order of the keys."""
        return tuple(self._fit(g) for g in range(len(self.keys)))

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator:
        return iter(self.keys)

    @property
    def term_names(self) -> list[str]:
        """The design's column names (the same in every group)."""
        return list(self.context["spec"].term_names)

    def _index(self) -> pd.Index:
        return pd.Index(list(self.keys), name=self.by)

    @property
    def params(self) -> pd.DataFrame:
        """Estimates: one row per group, one column per term (NaN where a group's mechanism failed)."""
        return pd.DataFrame(_stacked(self.releases, "params"), index=self._index(), columns=self.term_names)

    @property
    def bse(self) -> pd.DataFrame:
        """Standard errors: one row per group, one column per term."""
        se = np.sqrt(np.diagonal(_stacked(self.releases, "cov"), axis1=1, axis2=2))
        return pd.DataFrame(se, index=self._index(), columns=self.term_names)

    @property
    def nobs(self) -> pd.Series:
        """The rows each group's mechanism saw: declared sizes, or the released noisy sizes."""
        return pd.Series(self.sizes, index=self._index(), name="nobs")

    @property
    def failed(self) -> pd.Series:
        """Whether each group's release failed (its budget was still spent)."""
        return pd.Series(_stacked(self.releases, "failed"), index=self._index(), name="failed")

    def tidy(self, conf_level: float = 0.95) -> pd.DataFrame:
        """One row per group and term: ``<by>``, term, estimate, std.error, conf.low, conf.high, bias and the
        group's status, as each group's own ``tidy()`` gives them: the intervals carry a finite bias bound, the
        ``bias`` column holds it (0 without a bias, infinite where nothing bounds it) and ``status`` says where
        it can dominate (dpstats/uncertainty/bias.py)."""
        alpha = check_alpha(1 - conf_level)
        params, se = self.params.to_numpy(), self.bse.to_numpy()
        terms = self.term_names
        bounds = [bias_rule.bounds_of(None if r.failed else r.bias, r.bias_bound, len(terms)) for r in self.releases]
        ends = [
            bias_rule.bias_aware_intervals(r.params, r.cov, r.replicates, alpha, r.interval, bound)
            for r, bound in zip(self.releases, bounds, strict=True)
        ]
        statuses = [
            bias_rule.status(r.failed, bound, group_se)
            for r, bound, group_se in zip(self.releases, bounds, se, strict=True)
        ]
        return pd.DataFrame(
            {
                self.by: np.repeat(np.array(self.keys, dtype=object), len(terms)),
                "term": np.tile(terms, len(self.keys)),
                "estimate": params.ravel(),
                "std.error": se.ravel(),
                "conf.low": np.concatenate([low for low, _ in ends]),
                "conf.high": np.concatenate([high for _, high in ends]),
                "bias": np.concatenate(bounds),
                "status": np.repeat(statuses, len(terms)),
            }
        )

    def summary(self, alpha: float = 0.05) -> Summary:
        """The whole call: its privacy, and the estimates' spread across groups (post-processing)."""
        alpha = check_alpha(alpha)
        first, spent = self._fit(0), self.privacy
        params, se = self.params, self.bse
        failed = int(self.failed.sum())
        sizes = "declared public" if self.public_sizes else "released (noisy counts)"
        model = (
            ("Dep. variable", first.y_name),
            ("Formula", first.formula),
            *self._method_lines(first),
            ("Groups", f"{len(self.keys)} declared keys of {self.by!r}"),
            ("Group sizes", f"{sizes}: median {int(self.nobs.median())}"),
            ("Failed groups", str(failed)),
        )
        privacy = (
            ("Privacy", spent.describe() + " for the whole call"),
            ("Guarantee", spent.guarantee()),
            ("Neighbours", spent.neighbours),
            ("Budget split", ", ".join(f"{name}: {part:.4g}" for name, part in spent.split)),
            *(("Caveat", c) for c in spent.caveats),
        )
        coefficients = pd.DataFrame(
            {
                "mean coef": params.mean().to_numpy(),
                "sd across groups": params.std().to_numpy(),
                "median std err": se.median().to_numpy(),
            },
            index=self.term_names,
        )
        notes = (
            "One fit per declared group; res[key] is one group's result, res.tidy() all of them.",
            first.se_note,
        )
        return Summary(
            title="DP Grouped Regression Results",
            model=model,
            privacy=privacy,
            coefficients=coefficients,
            noisy_stats=(),
            notes=notes,
        )

    def _method_lines(self, first: DPRegressionResults) -> tuple[tuple[str, str], ...]:
        """The summary's method: the one used, or each mechanism auto chose with its number of groups."""
        if not self.per_group:
            return (("Method", first.method_title), ("Reference", first.citation))
        counts = self.methods.value_counts()
        chosen = ", ".join(f"{name} ({count} groups)" for name, count in counts.items())
        return (("Method", f"auto, per group: {chosen}"),)

    def __str__(self) -> str:
        return self.summary().as_text()


def _stacked(releases: Sequence[Release], name: str) -> np.ndarray:
    """Every group's ``name`` (params, cov or failed) on a leading group axis: a vectorised fit's own arrays,
    whose releases are made only when asked for (dpstats/mechanisms/noisystats/grouped_releases.py), else the
    releases' values stacked."""
    if isinstance(releases, GroupReleases):
        return getattr(releases, name)
    return np.stack([getattr(r, name) for r in releases])
