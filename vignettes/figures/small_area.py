"""Draw vignettes/figures/05_small_area.png from the code of vignettes/05_small_area.md (needs matplotlib).

Run from the repository: ``python vignettes/figures/small_area.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "05_small_area.md"


def main() -> None:
    namespace: dict = {"__name__": "__docs__"}
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL):
        exec(compile(block, str(PAGE), "exec"), namespace)
    fits, truth, sizes = namespace["fits"], namespace["true_slope"], namespace["sizes"]
    figure, axes = plt.subplots(1, 2, figsize=(10, 4.6), sharex=True, sharey=True)
    for ax, (name, res) in zip(axes, fits.items(), strict=True):
        slopes = res.tidy().query("term == 'parent_rank'")
        est, low, high = (slopes[c].to_numpy() for c in ("estimate", "conf.low", "conf.high"))
        ok = ~res.failed.to_numpy()
        ax.errorbar(truth[ok], est[ok], yerr=[est[ok] - low[ok], high[ok] - est[ok]], fmt="none",
                    ecolor="0.8", elinewidth=0.8, zorder=1)  # fmt: skip
        points = ax.scatter(truth[ok], est[ok], c=sizes[ok], cmap="viridis", s=14, zorder=2)
        ax.axline((0.35, 0.35), slope=1, color="black", linestyle="--", linewidth=0.8)
        ax.set_title(f"{name}\n(eps = 4 in total; {int((~ok).sum())} of 200 tracts failed)", fontsize=10)
        ax.set_xlabel("true slope")
        ax.set_ylim(-1.0, 1.7)
    axes[0].set_ylabel("private slope (NoisyStats), 95% interval")
    figure.colorbar(points, ax=axes, label="families in the tract")
    figure.savefig(HERE / "05_small_area.png", dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    main()
