"""The command line's privacy budget: ``dpstats budget FILE`` and ``dpstats ols ... --budget FILE``.

Seeded fits only; no statistical assertion (no false failures).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dpstats.cli import main
from dpstats.privacy.budget import PrivacyBudget

ENGEL_BOUNDS = ["--bounds", "income=0:5000", "--bounds", "foodexp=0:2400"]  # not a calibrated real design


@pytest.fixture
def engel_csv(tmp_path: Path, engel: pd.DataFrame) -> str:
    path = tmp_path / "engel.csv"
    engel.to_csv(path, index=False)
    return str(path)


def fit(csv: str, budget: Path, eps: str, *extra: str) -> int:
    return main(
        ["ols", "foodexp ~ income", "--data", csv, "--eps", eps, *ENGEL_BOUNDS, "--budget", str(budget), *extra]
    )


def test_create_spend_show(tmp_path: Path, engel_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "paper.json"
    assert main(["budget", str(path), "--eps", "1"]) == 0
    assert "Created" in capsys.readouterr().out
    assert fit(engel_csv, path, "0.75", "--seed", "1") == 0
    assert "DP OLS Regression Results" in capsys.readouterr().out
    saved = PrivacyBudget.load(path)
    assert saved.spent == {"eps": 0.75, "delta": 0.0}
    assert saved.ledger["formula"].tolist() == ["foodexp ~ income"]
    assert main(["budget", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "Spent in 1 release: eps = 0.75" in shown and "foodexp ~ income" in shown
    assert main(["budget", str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == saved.to_dict()


def test_an_overspending_fit_is_refused_before_the_csv_is_read(
    tmp_path: Path, engel_csv: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "paper.json"
    PrivacyBudget(eps=1).save(path)
    assert fit(engel_csv, path, "0.75", "--seed", "2") == 0
    before = path.read_bytes()
    capsys.readouterr()
    missing_csv = str(tmp_path / "not-there.csv")  # never opened: the budget refuses first
    assert fit(missing_csv, path, "0.5") == 2
    err = capsys.readouterr().err
    assert "refused before any data were read" in err and "not-there.csv" not in err
    assert path.read_bytes() == before


def test_a_fit_that_fails_to_run_leaves_the_file_as_it_was(
    tmp_path: Path, engel_csv: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "paper.json"
    PrivacyBudget(eps=1).save(path)
    before = path.read_bytes()
    bad = main(["ols", "foodexp ~ income", "--data", engel_csv, "--eps", "0.5", "--bounds", "income=0:5000"])
    assert bad == 2  # no --budget: the control
    assert main(["ols", "foodexp ~ x", "--data", engel_csv, "--eps", "0.5", *ENGEL_BOUNDS, "--budget", str(path)]) == 2
    assert "x" in capsys.readouterr().err
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ols", "y ~ x", "--data", "d.csv", "--eps", "1", "--budget", "{tmp}/none.json"], "no such file"),
        (["budget", "{tmp}/b.json", "--delta", "1e-6"], "give --eps or --rho too"),
        (["budget", "{tmp}/b.json", "--eps", "1", "--accounting", "zcdp"], "needs delta > 0"),
        (["budget", "{tmp}/none.json"], "no such file"),
    ],
)
def test_budget_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    assert message in capsys.readouterr().err


def test_a_budget_file_is_never_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "paper.json"
    assert main(["budget", str(path), "--eps", "1"]) == 0
    before = path.read_bytes()
    assert main(["budget", str(path), "--eps", "5"]) == 2
    assert "never overwritten" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_a_zcdp_budget_from_the_command_line(tmp_path: Path, engel_csv: str) -> None:
    path = tmp_path / "z.json"
    assert main(["budget", str(path), "--eps", "2", "--delta", "1e-6", "--accounting", "zcdp"]) == 0
    assert fit(engel_csv, path, "0.3", "--method", "noisystats", "--seed", "3") == 0  # auto refuses eps 0.3
    args = ["ols", "foodexp ~ income", "--data", engel_csv, "--rho", "0.05", "--method", "gradient"]
    assert main([*args, "--option", "variant=zcdp", *ENGEL_BOUNDS, "--budget", str(path), "--seed", "4"]) == 0
    saved = PrivacyBudget.load(path)
    assert saved.accounting == "zcdp" and saved.spent["rho"] == pytest.approx(0.05 + 0.3**2 / 2, rel=1e-15)
