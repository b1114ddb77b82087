"""dpstats.coefplot and dpstats.tradeoff_plot (matplotlib: the optional extra ``plot``; the dev extra installs it).

The fits are seeded (deterministic assertions). The figures are checked
through what they draw: the markers at each fit's estimates, the segments at
its ``conf_int()``, the curves at the error model's predictions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from statsmodels.datasets import fair

import dpstats
from dpstats.planning.tradeoff import error_curve

matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is the optional extra dpstats[plot]")

BOUNDS = {"rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0, 23), "educ": (9, 20)}
LEVELS = {"religious": [1.0, 2.0, 3.0, 4.0]}
RHS = "age + yrs_married + educ"


@pytest.fixture(scope="module")
def models() -> list:
    data = fair.load_pandas().data
    ols = dpstats.dp_ols(f"rate_marriage ~ {RHS}", data, eps=1, bounds=BOUNDS, random_state=1)
    fe = dpstats.dp_ols(f"rate_marriage ~ {RHS} + religious", data, eps=1, bounds=BOUNDS, levels=LEVELS, random_state=2)
    median = dpstats.dp_quantreg(f"rate_marriage ~ {RHS}", data, q=0.5, eps=1, bounds=BOUNDS, random_state=3)
    return [ols, fe, median]


def test_coefplot_draws_each_fits_estimates_and_intervals(models: list, tmp_path: Path) -> None:
    fig = dpstats.coefplot(models, collapse={"FE": "religious["}, rename={"yrs_married": "Years married"}, alpha=0.1)
    assert isinstance(fig, matplotlib.figure.Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["age", "Years married", "educ"]  # no intercept, no FE
    terms = ["age", "yrs_married", "educ"]
    points = [line for line in ax.lines if line.get_marker() not in ("None", None, "")]
    segments = ax.collections
    assert len(points) == len(segments) == 3
    for res, line, bars in zip(models, points, segments, strict=True):
        np.testing.assert_allclose(line.get_xdata(), res.params[terms].to_numpy())
        ci = res.conf_int(0.1).loc[terms]
        ends = np.array([[seg[0][0], seg[1][0]] for seg in bars.get_segments()])
        np.testing.assert_allclose(ends, ci.to_numpy())
    assert "90% interval" in ax.get_xlabel()
    out = tmp_path / "coefplot.png"
    fig.savefig(out, dpi=100)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_coefplot_draws_into_given_axes(models: list) -> None:
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    assert dpstats.coefplot(models[0], ax=ax, drop=()) is fig
    assert [t.get_text() for t in ax.get_yticklabels()] == models[0].term_names
    with pytest.raises(ValueError, match="no term is left"):
        dpstats.coefplot(models[0], drop=models[0].term_names)


def test_error_curve_agrees_with_compare_methods() -> None:
    formula = "rate_marriage ~ yrs_married + educ"
    curve = error_curve(formula, 6366, BOUNDS, eps=[0.3, 1.0, 3.0, 10.0])
    assert (curve.groupby("eps")["auto"].sum() == 1).all()
    for eps in (0.3, 1.0, 10.0):
        plan = dpstats.compare_methods(formula, n=6366, eps=eps, bounds=BOUNDS)
        at = curve[curve["eps"] == eps].set_index("method")
        assert at.index[at["auto"]][0] == plan.chosen
        table = plan.table.set_index("method")
        np.testing.assert_allclose(at["error / SE"], table.loc[at.index, "error / SE"].astype(float))


def test_tradeoff_plot_draws_the_error_curve(tmp_path: Path) -> None:
    formula = "rate_marriage ~ yrs_married + educ"
    fig = dpstats.tradeoff_plot(formula, n=6366, bounds=BOUNDS)
    ax = fig.axes[0]
    curve = error_curve(formula, 6366, BOUNDS)
    thin = [line for line in ax.lines if line.get_linewidth() < 2 and line.get_label() in set(curve["method"])]
    assert [line.get_label() for line in thin] == list(dict.fromkeys(curve["method"]))
    for line in thin:
        rows = curve[curve["method"] == line.get_label()]
        np.testing.assert_allclose(line.get_ydata(), rows["error / SE"])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    fig.savefig(tmp_path / "tradeoff.png", dpi=100)
    assert (tmp_path / "tradeoff.png").stat().st_size > 10_000
