"""dpstats fits in maketables' ETable (the optional extra ``dpstats[maketables]``; the dev extra installs it).

Seeded fits of statsmodels' fair data: the assertions are deterministic.
"""

from __future__ import annotations

import pytest
from statsmodels.datasets import fair

import dpstats
from dpstats.output.maketables import SE_TYPE, maketables_rows

mt = pytest.importorskip("maketables", reason="maketables is the optional extra dpstats[maketables]")

BOUNDS = {"rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0, 23), "educ": (9, 20)}
LEVELS = {"religious": [1.0, 2.0, 3.0, 4.0]}


@pytest.fixture(scope="module")
def models() -> list:
    data = fair.load_pandas().data
    ols = dpstats.dp_ols("rate_marriage ~ yrs_married + educ", data, eps=1, bounds=BOUNDS, random_state=1)
    fe = dpstats.dp_ols(
        "rate_marriage ~ yrs_married + educ + religious", data, eps=1, bounds=BOUNDS, levels=LEVELS, random_state=2
    )
    quantiles = dpstats.dp_quantreg(
        "rate_marriage ~ yrs_married", data, q=[0.25, 0.75], eps=1, bounds=BOUNDS, random_state=3
    )
    return [ols, fe, quantiles]


def test_etable_shows_dpstats_columns_with_their_privacy(models: list) -> None:
    table = mt.ETable(
        models,
        drop=["religious"],
        coef_fmt="b:.4f \n [ci95l:.4f, ci95u:.4f]",
        model_stats=["N", "se_type"],
        custom_model_stats=maketables_rows(models),
    )
    tex = table.make(type="tex")
    assert "\\multicolumn{4}{c}{rate_marriage}" in tex  # the quantile fits expand to one column each
    ols = models[0]
    ci = ols.conf_int(0.05)  # a bootstrap interval: ETable shows it, not b +- 1.96 se
    assert ols.replicates is not None
    assert f"[{ci.loc['educ', 'lower']:.4f}, {ci.loc['educ', 'upper']:.4f}]" in tex
    assert "eps & 1 & 1 & 0.5 & 0.5" in tex
    assert "DP method & " + " & ".join(f.method for f in [models[0], models[1], *models[2]]) in tex
    assert tex.count(SE_TYPE) == 4
    assert "religious" not in tex.split("\\midrule")[1]


def test_the_plug_in_attributes_give_the_same_table(models: list) -> None:
    """maketables reads them once its statsmodels duck typing stops claiming dpstats fits first."""
    from maketables.extractors import PluginExtractor, get_extractor

    fit = models[1]
    plugin = PluginExtractor()
    assert plugin.can_handle(fit)
    coefs = plugin.coef_table(fit)
    assert list(coefs.columns) == ["b", "se", "t", "p", "ci95l", "ci95u"]
    assert (coefs["b"] == fit.params).all() and (coefs["se"] == fit.bse).all()
    assert (coefs["ci95l"] == fit.conf_int()["lower"]).all()
    assert plugin.depvar(fit) == "rate_marriage"
    assert plugin.stat(fit, "N") == 6366 and plugin.stat(fit, "eps") == 1.0 and plugin.stat(fit, "r2") is None
    assert plugin.default_stat_keys(fit) == ["N", "eps", "method", "se_type"]
    # what maketables 0.2 uses instead today reads the same coefficients
    assert (get_extractor(fit).coef_table(fit)[["b", "se", "ci95l"]] == coefs[["b", "se", "ci95l"]]).all().all()
    assert get_extractor(fit).depvar(fit) == "rate_marriage"
