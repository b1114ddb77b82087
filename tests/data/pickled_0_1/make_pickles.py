"""Writes this folder's pickles: results of dpstats 0.1's flat layout, for tests/test_former_modules.py.

They were written by this script at commit 3e6f0f7 (the last commit before the subpackages), where
the classes lived in ``dpstats.results``, ``dpstats.quantile_fits``, ``dpstats.grouped_results``,
``dpstats.privacy`` and ``dpstats.formula``. Run from the repository's root:
``git checkout 3e6f0f7 && python tests/data/pickled_0_1/make_pickles.py``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
from statsmodels.datasets import engel

import dpstats

HERE = Path(__file__).resolve().parent
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}


def main() -> None:
    data = engel.load_pandas().data
    fits = {
        "ols_noisystats": dpstats.dp_ols(
            "foodexp ~ income", data, eps=1.0, bounds=BOUNDS, method="noisystats", random_state=1
        ),
        "ols_auto": dpstats.dp_ols("foodexp ~ income", data, eps=1.0, bounds=BOUNDS, random_state=1),
        "quantreg_several": dpstats.dp_quantreg(
            "foodexp ~ income", data, q=[0.25, 0.5], eps=1.0, bounds=BOUNDS, random_state=1
        ),
        "quantreg_histogram": dpstats.dp_quantreg(
            "foodexp ~ income", data, q=0.5, eps=1.0, bounds=BOUNDS, method="histogram", random_state=1
        ),
    }
    grouped = data.assign(g=np.where(data.income > 700, "hi", "lo"))
    fits["grouped"] = dpstats.dp_ols(
        "foodexp ~ income",
        grouped,
        eps=1.0,
        bounds=BOUNDS,
        by="g",
        groups=["hi", "lo"],
        method="noisystats",
        random_state=1,
    )
    for name, fit in fits.items():
        (HERE / f"{name}.pkl").write_bytes(pickle.dumps(fit, protocol=4))


if __name__ == "__main__":
    main()
