"""The command line: ``dpstats ols`` through ``main([...])`` and through ``python -m dpstats``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpstats.cli import CLIError, main, parse_bounds, parse_levels, parse_options

ENGEL_BOUNDS = ["--bounds", "income=0:5000", "--bounds", "foodexp=0:2500"]


@pytest.fixture
def engel_csv(tmp_path: Path, engel: pd.DataFrame) -> str:
    """The public engel data, plus an integer group column and a string column."""
    frame = engel.copy()
    frame["g"] = np.arange(len(frame)) % 3 + 1
    frame["region"] = np.where(np.arange(len(frame)) % 2 == 0, "north", "south")
    path = tmp_path / "engel.csv"
    frame.to_csv(path, index=False)
    return str(path)


def ols_args(csv: str, *extra: str, formula: str = "foodexp ~ income") -> list[str]:
    return ["ols", formula, "--data", csv, "--eps", "1", *ENGEL_BOUNDS, *extra]


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dpstats", *args], capture_output=True, text=True, timeout=120)


def strict_json(text: str) -> dict:
    """Parse JSON, refusing the non-standard NaN/Infinity tokens."""

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


# --------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------


def test_text_format(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ols_args(engel_csv, "--seed", "1")) == 0
    out = capsys.readouterr().out
    assert "DP OLS Regression Results" in out
    assert "foodexp ~ income" in out
    assert "eps = 1 (pure DP)" in out
    assert "income in [0, 5000], foodexp in [0, 2500]" in out


def test_latex_format(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ols_args(engel_csv, "--seed", "1", "--format", "latex")) == 0
    out = capsys.readouterr().out
    assert out.startswith(r"\begin{table}")
    assert r"\end{table}" in out
    assert r"\toprule" in out


def test_markdown_format(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ols_args(engel_csv, "--seed", "1", "--format", "markdown")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("|---") for line in lines)
    assert any(line.startswith("| Intercept |") for line in lines)
    assert any(line.startswith("| income |") for line in lines)


def test_json_format_is_strict_json(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ols_args(engel_csv, "--seed", "1", "--format", "json")) == 0
    doc = strict_json(capsys.readouterr().out)
    assert doc["terms"] == ["Intercept", "income"]
    assert len(doc["params"]) == 2
    assert doc["privacy"]["eps"] == 1.0
    assert doc["privacy"]["notion"] == "pure"
    assert doc["nobs"] == 235
    assert all(v > 0 for v in (doc["cov"][0][0], doc["cov"][1][1]))
    assert len(doc["replicates"]) > 0 and len(doc["replicates"][0]) == 2
    # with no budget for standard errors the NaN covariance must come out as null
    assert main(ols_args(engel_csv, "--seed", "1", "--format", "json", "--se-share", "0")) == 0
    doc = strict_json(capsys.readouterr().out)
    assert doc["cov"] == [[None, None], [None, None]] and doc["replicates"] is None


def test_main_output_matches_python_m(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m dpstats`` is ``main``: the same output, exit 0 and nothing on stderr (one process: every
    format's content is checked in-process above)."""
    assert main(ols_args(engel_csv, "--seed", "11", "--format", "json")) == 0
    proc = run_module(*ols_args(engel_csv, "--seed", "11", "--format", "json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout == capsys.readouterr().out
    assert strict_json(proc.stdout)["bounds"] == {"income": [0.0, 5000.0], "foodexp": [0.0, 2500.0]}


# --------------------------------------------------------------------------
# Seeds
# --------------------------------------------------------------------------


def test_seed_makes_output_reproducible(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for seed in ("5", "5", "6"):
        assert main(ols_args(engel_csv, "--seed", seed, "--format", "json")) == 0
        outputs.append(strict_json(capsys.readouterr().out)["params"])
    assert outputs[0] == outputs[1]
    assert outputs[0] != outputs[2]


def test_without_seed_the_noise_is_fresh(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Two continuous Laplace draws coincide with probability 0. The noisy
    # statistics are released even when NoisyStats fails (params are then null).
    stats = []
    for _ in range(2):
        assert main(ols_args(engel_csv, "--format", "json")) == 0
        stats.append(strict_json(capsys.readouterr().out)["noisy_stats"])
    assert stats[0] != stats[1]


# --------------------------------------------------------------------------
# Metadata arguments
# --------------------------------------------------------------------------


def test_numeric_levels_are_converted_to_match_the_column(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ols_args(
        engel_csv, "--levels", "g=1,2,3", "--seed", "2", "--format", "json", formula="foodexp ~ income + C(g)"
    )
    assert main(args) == 0
    doc = strict_json(capsys.readouterr().out)
    assert doc["terms"] == ["Intercept", "C(g)[T.2]", "C(g)[T.3]", "income"]
    assert doc["levels"] == {"g": ["1", "2", "3"]}  # read as written in the CSV


def test_string_levels(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ols_args(engel_csv, "--levels", "region=south,north", "--seed", "2", formula="foodexp ~ income + region")
    assert main(args) == 0
    assert "region[T.north]" in capsys.readouterr().out


def test_option_reaches_the_mechanism(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ols_args(engel_csv, "--option", "no_such_option=3")) == 2
    err = capsys.readouterr().err
    assert "no_such_option" in err


def test_parse_bounds() -> None:
    assert parse_bounds(["x=-5:2.5", "np.log(income)=0:9", "y=1e-3:1e3"]) == {
        "x": (-5.0, 2.5),
        "np.log(income)": (0.0, 9.0),
        "y": (1e-3, 1e3),
    }
    for bad in ("x", "x=", "=0:1", "x=0", "x=0:1:2", "x=a:1"):
        with pytest.raises(CLIError, match="--bounds"):
            parse_bounds([bad])
    with pytest.raises(CLIError, match="declared twice"):
        parse_bounds(["x=0:1", "x=0:2"])


def test_parse_levels_and_options() -> None:
    assert parse_levels(["g=a, b ,c"]) == {"g": ["a", "b", "c"]}
    with pytest.raises(CLIError, match="--levels"):
        parse_levels(["g=a,,b"])
    assert parse_options(["k=3", "rate=0.5", "flag=true", "name=exp", "xs=[1,2]", "none=None"]) == {
        "k": 3,
        "rate": 0.5,
        "flag": True,
        "name": "exp",
        "xs": [1, 2],
        "none": None,
    }
    with pytest.raises(CLIError, match="--option"):
        parse_options(["noequals"])
    with pytest.raises(CLIError, match="--eps"):
        parse_options(["eps=2"])


def test_levels_match_the_cells_as_written_whatever_the_other_rows(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A text cell in a numeric column must not change how the other cells match their levels."""
    rows = [f"{1 + i % 3},{i / 10},{i / 5}" for i in range(40)]
    clean, dirty = tmp_path / "clean.csv", tmp_path / "dirty.csv"
    clean.write_text("g,x,y\n" + "\n".join(rows) + "\n")
    dirty.write_text("g,x,y\n" + "\n".join([*rows[:-1], "oops,3.9,7.8"]) + "\n")
    outputs = []
    for path in (clean, dirty):
        args = ["ols", "y ~ x + C(g)", "--data", str(path), "--eps", "1", "--seed", "3", "--format", "json"]
        args += ["--bounds", "x=0:4", "--bounds", "y=0:8", "--levels", "g=1,2,3"]
        assert main(args) == 0
        outputs.append(strict_json(capsys.readouterr().out))
    assert outputs[0]["terms"] == outputs[1]["terms"] == ["Intercept", "C(g)[T.2]", "C(g)[T.3]", "x"]


def test_a_malformed_row_is_treated_row_wise(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [f"{i / 10},{i / 5}" for i in range(40)]
    for bad in ("1.0,2.0,3.0,4.0", "1.0", "\xff\xfe,1"):
        path = tmp_path / "bad.csv"
        path.write_bytes(("x,y\n" + "\n".join([*rows[:-1], bad]) + "\n").encode("latin-1"))
        assert main(["ols", "y ~ x", "--data", str(path), "--eps", "1", "--bounds", "x=0:4", "--bounds", "y=0:8"]) == 0
        assert "Intercept" in capsys.readouterr().out


# --------------------------------------------------------------------------
# Errors: exit code 2, one line naming the argument, no traceback
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "formula", "expected"),
    [
        (["--bounds", "income=0-5000"], "foodexp ~ income", "--bounds 'income=0-5000'"),
        (["--bounds", "wealth=0:10"], "foodexp ~ income", "'wealth' is not a column of --data"),
        ([], "foodexp ~ incomez", "incomez"),
        (["--eps", "0"], "foodexp ~ income", "eps must be a positive"),
        (["--seed", "-1"], "foodexp ~ income", "--seed"),
        (["--format", "xml"], "foodexp ~ income", "--format"),
        (["--method", "nope"], "foodexp ~ income", "unknown method 'nope'"),
        ([], "foodexp ~ income + C(g)", "C(g)"),
        (["--bounds", "income=0:abc"], "foodexp ~ income", "--bounds"),
        (["--bounds", "income=5000:0"], "foodexp ~ income", "income"),
    ],
)
def test_errors_exit_2_with_a_message(
    engel_csv: str, capsys: pytest.CaptureFixture[str], extra: list[str], formula: str, expected: str
) -> None:
    assert main(ols_args(engel_csv, *extra, formula=formula)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("dpstats: error: ")
    assert expected in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_missing_bounds_and_file_errors(tmp_path: Path, engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ols", "foodexp ~ income", "--data", engel_csv, "--eps", "1", "--bounds", "income=0:5000"]) == 2
    assert "foodexp" in capsys.readouterr().err
    assert main(["ols", "foodexp ~ income", "--data", str(tmp_path / "none.csv"), "--eps", "1"]) == 2
    assert "--data" in capsys.readouterr().err
    assert main(["ols", "foodexp ~ income", "--eps", "1"]) == 2
    assert "--data" in capsys.readouterr().err


def test_errors_through_python_m_have_no_traceback(engel_csv: str) -> None:
    """An error through ``python -m dpstats``: exit 2, one message on stderr, no traceback (the messages of
    every error are checked in-process above)."""
    proc = run_module(*ols_args(engel_csv, "--bounds", "income=5000:0"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("dpstats: error: ")
    assert "income" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "ols" in capsys.readouterr().out
    assert main(["ols", "--help"]) == 0
    assert "--bounds" in capsys.readouterr().out


def test_no_command_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("dpstats: error: ")


def test_cli_module_imports_no_heavy_dependencies() -> None:
    code = "import sys, dpstats.cli; print(sorted(m for m in ('pandas', 'statsmodels', 'patsy') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_rho_for_a_zcdp_mechanism(engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ols", "foodexp ~ income", "--data", engel_csv, *ENGEL_BOUNDS, "--format", "json", "--seed", "1"]
    assert main([*args, "--rho", "0.5", "--method", "gradient", "--option", "variant=zcdp"]) == 0
    privacy = strict_json(capsys.readouterr().out)["privacy"]
    assert (privacy["notion"], privacy["rho"]) == ("zcdp", 0.5)
    assert main([*args, "--rho", "0.5"]) == 2  # auto picks NoisyStats, which is not zCDP
    assert "rho" in capsys.readouterr().err
    assert main([*args, "--rho", "0.5", "--eps", "1"]) == 2  # not both
    assert "not allowed with" in capsys.readouterr().err


def test_unit_and_max_rows_reach_the_fit_with_the_key_read_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Keys 1 and 1.0 are two units whatever the other rows hold (a numeric dtype would merge them)."""
    rows = ["id,x,y", *(f"{key},{i % 3},{i % 5}" for i, key in enumerate(["1", "1.0"] * 4 + ["a"] * 3))]
    csv = tmp_path / "panel.csv"
    csv.write_text("\n".join(rows) + "\n")
    call = ["ols", "y ~ x", "--data", str(csv), "--eps", "1", "--bounds", "x=0:2", "--bounds", "y=0:4", "--method"]
    assert main([*call, "noisystats", "--unit", "id", "--max-rows", "2", "--format", "json", "--seed", "1"]) == 0
    doc = strict_json(capsys.readouterr().out)
    assert doc["nobs"] == 6 and "one id (at most 2 rows; 3 units)" in doc["privacy"]["neighbours"]
    assert main([*call, "noisystats", "--max-rows", "2"]) == 2
    assert "pass unit=" in capsys.readouterr().err
