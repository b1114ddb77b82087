"""Interoperability with R, in both directions.

* R users calling Python (the R package in ``r_bridge/``, through reticulate):
  dpstats/r_interop/columns.py rebuilds the data from R's column records, and
  dpstats/r_interop/calls.py answers the R package's calls (fits, budgets,
  tables, the plan before spending) in builtins only.
* Python users holding R objects (rpy2): dpstats/r_interop/embedded.py.

Nothing here reads or releases data beyond what ``dp_ols`` does: the data go in,
only the release comes out.
"""

from ..output.render import plain
from .calls import (
    budget_from_json,
    budget_payload,
    check_budget_first,
    compare_from_r,
    fit_from_r,
    new_budget,
    result_payload,
    table_from_r,
)
from .columns import column_from_r, describe_frame, echo_columns, frame_from_columns
from .embedded import pandas_to_r, r_to_pandas, result_to_r, start_r

__all__ = [
    "budget_from_json",
    "budget_payload",
    "check_budget_first",
    "column_from_r",
    "compare_from_r",
    "describe_frame",
    "echo_columns",
    "fit_from_r",
    "frame_from_columns",
    "new_budget",
    "pandas_to_r",
    "plain",
    "r_to_pandas",
    "result_payload",
    "result_to_r",
    "start_r",
    "table_from_r",
]
