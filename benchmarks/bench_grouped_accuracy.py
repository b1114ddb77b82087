"""Accuracy of grouped (small-area) fits: auto per group against every single mechanism, on grouped designs.

Each design is ``groups`` tracts of ``rows`` rows, ``y = a_g + b_g x + N(0, noise^2)`` with x uniform on
[0, 1], a_g ~ N(0.5, 0.2), b_g ~ N(1, 0.3); x's bounds are [0, 1], y's the mean plus or minus ``spread``
standard deviations of y over all rows (rows outside are clipped by the front end, as a user's bounds
would), or, in the ``loose`` designs (issue 44), a range 10 or 30 noise sds wide about y's mean with the
group sizes not declared (noisy counts). Elsewhere sizes are declared public. Per method, over the groups:

* ``corr``: correlation of the released slopes with the true b_g (groups whose release failed left out);
* ``median``, ``mean`` and ``p90``: the median, mean and 90th percentile of |slope - the group's OLS
  slope| (the 90th percentile is what a grouped auto ranks by: dpstats/planning/selection.py);
* ``rmse``: the root mean square of the same (an aggregate over groups reads this; one wild group in a
  few hundred moves it);
* ``failed``: the share of groups whose release failed (counted in no error above).

The last line of each design is auto's ``p90``, ``mean`` and ``rmse`` over the best single mechanism's
(issue 31: at most 1.25), and its correlation (the 2,000 x 50 design at eps 5: at least 0.5).

Run: ``.venv/bin/python benchmarks/bench_grouped_accuracy.py`` (about 10 minutes on 2 cores;
``--designs issue`` for the issue's design alone).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import dpstats

DESIGNS = {
    "issue": {"groups": 2000, "rows": 50, "eps": 5.0, "noise": 0.2, "spread": 2.0},
    "tracts": {"groups": 1000, "rows": 100, "eps": 1.0, "noise": 0.2, "spread": 3.0},
    "small-quiet": {"groups": 500, "rows": 30, "eps": 2.0, "noise": 0.02, "spread": 3.0},
    "large": {"groups": 200, "rows": 400, "eps": 1.0, "noise": 0.2, "spread": 3.0},
    "loose-10": {"groups": 2000, "rows": 50, "eps": 5.0, "noise": 0.2, "range_sds": 10.0, "sizes": "noisy"},
    "loose-30": {"groups": 2000, "rows": 50, "eps": 5.0, "noise": 0.2, "range_sds": 30.0, "sizes": "noisy"},
}
"""``range_sds``: y's declared range is that many noise sds wide, centred on y's mean (issue 44's loose bounds,
instead of ``spread`` sds of y); ``sizes``: "noisy" leaves the group sizes undeclared (each group's count is
released), else they are declared public."""
METHODS = ("auto", "histogram", "theilsen", "noisystats", "gradient")


def design(groups: int, rows: int, noise: float, spread: float | None, seed: int = 0, range_sds: float | None = None):
    """The frame, the true slopes and the declared bounds (y's: ``spread`` sds of y, or ``range_sds`` noise sds
    wide, about y's mean)."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(groups), rows)
    x = rng.uniform(0.0, 1.0, g.size)
    a, b = rng.normal(0.5, 0.2, groups), rng.normal(1.0, 0.3, groups)
    y = a[g] + b[g] * x + rng.normal(0.0, noise, g.size)
    half = spread * y.std() if range_sds is None else range_sds * noise / 2.0
    bounds = {"x": (0.0, 1.0), "y": (y.mean() - half, y.mean() + half)}
    return pd.DataFrame({"g": g, "x": x, "y": y}), b, bounds


def ols_slopes(frame: pd.DataFrame, bounds: dict) -> np.ndarray:
    """Each group's non-private OLS slope on the clipped data (what the mechanisms see)."""
    y = frame["y"].clip(*bounds["y"])
    x = frame["x"]
    grouped = pd.DataFrame({"g": frame["g"], "x": x, "y": y, "xy": x * y, "xx": x * x}).groupby("g").mean()
    return ((grouped.xy - grouped.x * grouped.y) / (grouped.xx - grouped.x**2)).to_numpy()


def measure(name: str, spec: dict, seed: int) -> list[dict]:
    frame, truth, bounds = design(
        spec["groups"], spec["rows"], spec["noise"], spec.get("spread"), seed, spec.get("range_sds")
    )
    reference = ols_slopes(frame, bounds)
    keys = list(range(spec["groups"]))
    sizes = {} if spec.get("sizes") == "noisy" else {"group_sizes": dict.fromkeys(keys, spec["rows"])}
    rows = []
    for method in METHODS:
        start = time.perf_counter()
        res = dpstats.dp_ols(
            "y ~ x", frame, eps=spec["eps"], bounds=bounds, method=method, by="g", groups=keys, random_state=seed,
            **sizes,
        )  # fmt: skip
        slopes = res.params["x"].to_numpy()
        ok = np.isfinite(slopes)
        gap = np.abs(slopes[ok] - reference[ok])
        chosen = ", ".join(sorted(set(res.methods))) if method == "auto" else method
        rows.append({
            "design": name, "method": method, "chose": chosen,
            "corr": float(np.corrcoef(slopes[ok], truth[ok])[0, 1]) if ok.sum() > 2 else np.nan,
            "median": float(np.median(gap)), "mean": float(np.mean(gap)), "p90": float(np.quantile(gap, 0.9)),
            "rmse": float(np.sqrt(np.mean(gap**2))), "failed": float(1 - ok.mean()),
            "seconds": time.perf_counter() - start,
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", choices=list(DESIGNS), default=list(DESIGNS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    for name in args.designs:
        spec = DESIGNS[name]
        table = pd.DataFrame(measure(name, spec, args.seed)).set_index("method")
        print(f"\n{name}: {spec}")
        print(table.drop(columns="design").round(4).to_string())
        single = table.drop(index="auto")
        auto = table.loc["auto"]
        ratios = ", ".join(f"{m} {auto[m] / single[m].min():.2f}" for m in ("p90", "mean", "rmse"))
        print(f"auto / best single: {ratios}; auto's correlation with the truth {auto['corr']:.2f}")


if __name__ == "__main__":
    main()
