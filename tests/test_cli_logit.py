"""The command line's binary-response fits: ``dpstats logit ...`` and ``dpstats probit ...`` (issue 40).

Seeded fits on statsmodels' public fair data; no statistical assertion (no false failures): the numbers are
checked against the Python API's release with the same seed, so what is tested is the plumbing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.cli import main
from dpstats.privacy.budget import PrivacyBudget

FORMULA = "I(affairs > 0) ~ rate_marriage + age + yrs_married"
BOUNDS = {"affairs": (0, 60), "rate_marriage": (1, 5), "age": (17.5, 42), "yrs_married": (0.5, 23)}
BOUND_ARGS = [arg for name, (lo, hi) in BOUNDS.items() for arg in ("--bounds", f"{name}={lo}:{hi}")]
SLOPES = ["rate_marriage", "age", "yrs_married"]


@pytest.fixture(scope="module")
def fair_csv(tmp_path_factory: pytest.TempPathFactory) -> str:
    """statsmodels' fair data (public, n = 6366), with a 0/1 response column."""
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data
    frame["had_affair"] = (frame["affairs"] > 0).astype(int)
    path = tmp_path_factory.mktemp("fair") / "fair.csv"
    frame.to_csv(path, index=False)
    return str(path)


def binary_args(csv: str, *extra: str, command: str = "logit", formula: str = FORMULA) -> list[str]:
    return [command, formula, "--data", csv, "--eps", "1", *BOUND_ARGS, *extra]


def strict_json(text: str) -> dict:
    """Parse JSON, refusing the non-standard NaN/Infinity tokens."""

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main([*args, "--format", "json"]) == 0
    return strict_json(capsys.readouterr().out)


# --------------------------------------------------------------------------
# Output: the summary and the average marginal effects, in every format
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "title"), [("logit", "Logit"), ("probit", "Probit")])
def test_text_prints_the_summary_then_the_marginal_effects(
    fair_csv: str, capsys: pytest.CaptureFixture[str], command: str, title: str
) -> None:
    assert main(binary_args(fair_csv, "--seed", "1", command=command)) == 0
    out = capsys.readouterr().out
    summary, _, margins = out.partition(f"DP {title} Marginal Effects")
    assert f"DP {title} Regression Results" in summary and FORMULA in summary
    assert "marginal effects: 0.05" in summary  # the default margins_share, in the budget split
    assert "dy/dx" in margins and "Std. Err." in margins
    assert [line.split()[0] for line in margins.strip().splitlines()[2:]] == SLOPES


def test_json_holds_the_margins_and_equals_the_python_release(
    fair_csv: str, fair: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = run_json(binary_args(fair_csv, "--seed", "7"), capsys)
    assert doc["estimator"] == "logit" and doc["terms"] == ["Intercept", *SLOPES]
    assert doc["margins"]["terms"] == SLOPES and all(se > 0 for se in doc["margins"]["se"])
    res = dpstats.dp_logit(FORMULA, fair, eps=1, bounds=BOUNDS, random_state=7)
    assert np.allclose(doc["params"], res.params.to_numpy(), rtol=1e-12, atol=0)
    frame = res.get_margeff().summary_frame()
    assert np.allclose(doc["margins"]["dydx"], frame["dy/dx"], rtol=1e-12, atol=0)
    assert np.allclose(doc["margins"]["se"], frame["Std. Err."], rtol=1e-12, atol=0)


def test_markdown_and_latex_carry_a_margins_table(fair_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(binary_args(fair_csv, "--seed", "2", "--format", "markdown", command="probit")) == 0
    out = capsys.readouterr().out
    assert "**DP Probit Average Marginal Effects (dy/dx, overall)**" in out
    assert "|  | dy/dx | Std. Err. | z | Pr(>\\|z\\|) | Conf. Int. Low | Cont. Int. Hi. |" in out
    assert all(any(line.startswith(f"| {term} |") for line in out.splitlines()) for term in SLOPES)
    assert main(binary_args(fair_csv, "--seed", "2", "--format", "latex", command="probit")) == 0
    out = capsys.readouterr().out
    assert out.count(r"\begin{table}") == 2 and out.count(r"\end{table}") == 2
    assert r"\caption{DP Probit Average Marginal Effects (dy/dx, overall)}" in out
    assert r"rate\_marriage & " in out


def test_margins_share_reaches_the_fit(fair_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(binary_args(fair_csv, "--seed", "3", "--margins-share", "0.2"), capsys)
    assert dict(doc["privacy"]["split"])["marginal effects"] == pytest.approx(0.2)
    assert doc["privacy"]["eps"] == pytest.approx(1.0)
    doc = run_json(binary_args(fair_csv, "--seed", "3", "--margins-share", "0"), capsys)
    assert doc["margins"] is None and "marginal effects" not in dict(doc["privacy"]["split"])
    assert main(binary_args(fair_csv, "--seed", "3", "--margins-share", "0")) == 0
    assert (
        capsys.readouterr()
        .out.rstrip()
        .endswith("Average marginal effects: none (--margins-share 0 spent nothing on them).")
    )


def test_a_zero_one_column_and_a_seed(fair_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    formula = "had_affair ~ rate_marriage + age + yrs_married"
    first, again, other = (
        run_json(binary_args(fair_csv, "--seed", seed, formula=formula), capsys) for seed in ("5", "5", "6")
    )
    assert first["terms"] == ["Intercept", *SLOPES] and first["params"] == again["params"] != other["params"]
    assert first["margins"] == again["margins"]


def test_python_m_equals_main(fair_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m dpstats probit`` is ``main``: the same output, exit 0, nothing on stderr."""
    args = binary_args(fair_csv, "--seed", "11", command="probit")
    assert main(args) == 0
    proc = subprocess.run([sys.executable, "-m", "dpstats", *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout == capsys.readouterr().out


def test_the_budget_is_charged_and_checked_before_the_csv_is_read(
    tmp_path: Path, fair_csv: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "paper.json"
    PrivacyBudget(eps=1.5).save(path)
    assert main(binary_args(fair_csv, "--seed", "4", "--budget", str(path))) == 0
    saved = PrivacyBudget.load(path)
    assert saved.spent["eps"] == pytest.approx(1.0) and saved.ledger["formula"].tolist() == [FORMULA]
    capsys.readouterr()
    assert main(binary_args(str(tmp_path / "not-there.csv"), "--budget", str(path), command="probit")) == 2
    err = capsys.readouterr().err
    assert "refused before any data were read" in err and "not-there.csv" not in err


# --------------------------------------------------------------------------
# Errors: exit code 2, one line, no traceback
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--margins-share", "1.5"], "margins_share"),
        (["--method", "noisystats"], "does not fit logit"),
        (["--option", "margins_share=0.1"], "use --margins-share instead"),
        (["--bounds", "age=42:17.5"], "age"),
    ],
)
def test_errors_exit_2_with_a_message(
    fair_csv: str, capsys: pytest.CaptureFixture[str], extra: list[str], expected: str
) -> None:
    assert main(binary_args(fair_csv, *extra)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("dpstats: error: ")
    assert expected in captured.err and len(captured.err.strip().splitlines()) == 1


def test_rho_and_a_missing_bound_are_refused(fair_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["logit", FORMULA, "--data", fair_csv, "--rho", "0.5", *BOUND_ARGS]
    assert main(args) == 2
    assert "rho= is not available for dp_logit" in capsys.readouterr().err
    assert main(["probit", FORMULA, "--data", fair_csv, "--eps", "1", "--bounds", "rate_marriage=1:5"]) == 2
    assert "age" in capsys.readouterr().err


def test_margins_share_is_not_an_ols_option(fair_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ols", "age ~ rate_marriage", "--data", fair_csv, "--eps", "1", *BOUND_ARGS, "--margins-share", "0.1"]
    assert main(args) == 2
    assert "unrecognized arguments: --margins-share" in capsys.readouterr().err


def test_help_lists_the_binary_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "logit" in out and "probit" in out
    assert main(["probit", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--margins-share" in out and "--bounds" in out and "histogram" in out
