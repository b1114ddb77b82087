"""Grouped fits with survey weights (dpstats/groups/fit.py, ``survey``): every group's weighted release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

import dpstats

BOUNDS = {"x": (0.0, 10.0), "y": (-5.0, 15.0), "wt": (0.0, 10.0)}
GROUPS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 3000
    d = pd.DataFrame({"x": rng.uniform(0, 10, n), "wt": rng.uniform(0.5, 8, n), "g": rng.choice(GROUPS, n)})
    d["y"] = 1 + 0.5 * d.x + 0.3 * (d.g == "b") * d.x + rng.normal(0, 1, n)
    return d


def test_each_groups_weighted_fit_is_its_wls_and_pad_rows_weigh_nothing(data):
    """Public sizes above the groups' row counts pad every group with rows of weight 0 (the declared lower
    end), so the limit at a huge eps is each group's WLS on its own rows."""
    sizes = {g: int((data.g == g).sum()) + 50 for g in GROUPS}
    res = dpstats.dp_ols("y ~ x", data, eps=1e9, bounds=BOUNDS, weights="wt", by="g", groups=GROUPS,
                         group_sizes=sizes, method="noisystats", random_state=1)  # fmt: skip
    for g in GROUPS:
        rows = data[data.g == g]
        ref = smf.wls("y ~ x", rows, weights=rows.wt).fit()
        np.testing.assert_allclose(res.params.loc[g].to_numpy(), ref.params.to_numpy(), rtol=1e-6)


def test_a_grouped_auto_with_weights_chooses_weighted_mechanisms_only(data):
    res = dpstats.dp_ols("y ~ x", data, eps=2.0, bounds=BOUNDS, weights="wt", by="g", groups=GROUPS, random_state=2)
    assert set(res.methods) <= dpstats.mechanisms.weighted_methods("ols")


def test_a_grouped_fit_with_weights_refuses_an_unweighted_method_before_reading(data):
    with pytest.raises(ValueError, match="does not take survey weights"):
        dpstats.dp_ols("y ~ x", None, eps=1.0, bounds=BOUNDS, weights="wt", by="g", groups=GROUPS, method="theilsen")
