"""Fuzz battery, the command line: neighbouring CSV files give the same exit code and message.

The CSV is written from neighbouring data frames (one row replaced by bad
cells: text, NaN, infinities, sentinels), so the command sees what a curator's
file would hold; ``main`` runs in-process. Derandomized: false-failure rate 0.

40 examples (two commands each): the fits behind the command are fuzzed on
their own in tests/test_fuzz_mechanisms.py and tests/test_fuzz_formulas.py;
here the object is the command's path from a CSV file's bad cells to its exit
code and messages. The bootstrap draws :data:`conftest.FEW_REPLICATES`
replicates, as in the rest of the battery.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from fuzz_support import BOUNDS, MESSAGE_FORMS, RESULT_FORMS, neighbour_pair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpstats.cli import main

ARGS = [f"--bounds={name}={lo}:{hi}" for name, (lo, hi) in BOUNDS.items()] + ["--levels", "g=a,b,c"]


pytestmark = pytest.mark.usefixtures("few_replicates_in_module")


@pytest.mark.slow
@settings(derandomize=True, database=None, deadline=None, max_examples=40, suppress_health_check=list(HealthCheck))
@given(pair=neighbour_pair(max_n=20), method=st.sampled_from(["noisystats", "histogram", "theilsen"]))
def test_neighbouring_csv_files_give_the_same_outcome(tmp_path_factory, pair, method: str) -> None:
    directory = tmp_path_factory.mktemp("csv")
    outcomes = []
    for k, frame in enumerate(pair):
        path = directory / f"d{k}.csv"
        frame.to_csv(path, index=False)
        formula = "y ~ x" if method == "theilsen" else "y ~ x + C(g) + np.log(w)"
        argv = ["ols", formula, "--data", str(path), "--eps", "1", "--method", method, "--seed", "1", *ARGS]
        code, out, err = _run(argv)
        assert not [f for f in RESULT_FORMS if f in out] and not [f for f in MESSAGE_FORMS if f in err], (out, err)
        outcomes.append((code, err))
    assert outcomes[0] == outcomes[1]


def _run(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, standard output and standard error of the command ``argv``, run in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()
