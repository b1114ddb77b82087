"""The command line's survey weights (issue 41): ``--weights``, ``--cluster`` and ``--strata`` in every fit command.

Seeded fits on a simulated stratified two-stage sample; no statistical assertion (no false failures): each run is
checked against the Python call with the same seed, so what is tested is the plumbing and the wording.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.cli import main

BOUNDS = {"x": (0.0, 1.0), "yc": (-6.0, 6.0), "wt": (0.0, 20.0)}
LEVELS = {"st": ["s1", "s2", "s3"], "psu": ["1", "2", "3", "4", "5"]}
BOUND_ARGS = [arg for name, (lo, hi) in BOUNDS.items() for arg in ("--bounds", f"{name}={lo:g}:{hi:g}")]
LEVEL_ARGS = [arg for name, values in LEVELS.items() for arg in ("--levels", f"{name}={','.join(values)}")]
DESIGN_ARGS = ["--weights", "wt", "--cluster", "psu", "--strata", "st", *LEVEL_ARGS]
DESIGN = {"weights": "wt", "cluster": "psu", "strata": "st"}
COMMANDS = {
    "ols": ("yc ~ x", dpstats.dp_ols, {}),
    "quantreg": ("yc ~ x", dpstats.dp_quantreg, {"q": 0.5}),
    "logit": ("y ~ x", dpstats.dp_logit, {}),
    "probit": ("y ~ x", dpstats.dp_probit, {}),
}


@pytest.fixture(scope="module")
def sample() -> pd.DataFrame:
    """4,000 rows: five PSUs in each of three strata, weights in [1, 20], a continuous and a binary response."""
    rng = np.random.default_rng(41)
    n = 4000
    frame = pd.DataFrame(
        {
            "x": rng.uniform(size=n),
            "st": rng.choice(LEVELS["st"], n),
            "psu": rng.choice(LEVELS["psu"], n),
            "wt": rng.uniform(1, 20, n),
        }
    )
    frame["yc"] = -1 + 2 * frame["x"] + rng.normal(size=n)
    frame["y"] = (rng.uniform(size=n) < 1 / (1 + np.exp(1 - 2 * frame["x"]))).astype(int)
    return frame


@pytest.fixture(scope="module")
def sample_csv(sample: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("survey") / "survey.csv"
    sample.to_csv(path, index=False)
    return str(path)


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main([*args, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_weighted_run_releases_what_python_does(
    command: str, sample: pd.DataFrame, sample_csv: str, capsys: pytest.CaptureFixture[str]
) -> None:
    formula, fit, extra = COMMANDS[command]
    doc = run_json(
        [command, formula, "--data", sample_csv, "--eps", "2", *BOUND_ARGS, *DESIGN_ARGS, "--seed", "7"], capsys
    )
    res = fit(formula, sample, eps=2, bounds=BOUNDS, levels=LEVELS, random_state=7, **DESIGN, **extra)
    assert doc["method"] == res.method
    assert np.allclose(doc["params"], res.params.to_numpy(), rtol=1e-12, atol=0)
    assert np.allclose(doc["cov"], res.cov_params().to_numpy(), rtol=1e-12, atol=0, equal_nan=True)
    assert {k: doc["hyperparameters"][k] for k in DESIGN} == DESIGN


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_summary_says_weighted(command: str, sample_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    formula = COMMANDS[command][0]
    assert main([command, formula, "--data", sample_csv, "--eps", "2", *BOUND_ARGS, *DESIGN_ARGS, "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Weights               wt; PSUs: psu within strata st" in out
    assert main([command, formula, "--data", sample_csv, "--eps", "2", *BOUND_ARGS, "--weights", "wt"]) == 0
    assert "Weights               wt; PSUs: rows" in capsys.readouterr().out
    assert main([command, formula, "--data", sample_csv, "--eps", "2", *BOUND_ARGS]) == 0
    assert "Weights" not in capsys.readouterr().out


def test_quantreg_takes_its_quantile(sample: pd.DataFrame, sample_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(
        ["quantreg", "yc ~ x", "--data", sample_csv, "--eps", "2", *BOUND_ARGS, "--q", "0.25", "--seed", "3"], capsys
    )
    res = dpstats.dp_quantreg("yc ~ x", sample, q=0.25, eps=2, bounds=BOUNDS, random_state=3)
    assert doc["hyperparameters"]["q"] == 0.25
    assert np.allclose(doc["params"], res.params.to_numpy(), rtol=1e-12, atol=0)


def test_the_design_is_checked(sample_csv: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["ols", "yc ~ x", "--data", sample_csv, "--eps", "1", *BOUND_ARGS]
    assert main([*base, "--cluster", "psu", *LEVEL_ARGS]) == 2
    assert "pass its weights= too" in capsys.readouterr().err
    assert main([*base, "--weights", "wt", "--cluster", "psu"]) == 2
    assert "'psu' needs its levels declared" in capsys.readouterr().err
    assert main([*base, "--weights", "wt", "--method", "theilsen"]) == 2
    assert "does not take survey weights" in capsys.readouterr().err
    assert main([*base, "--option", "weights=wt"]) == 2
    assert "use --weights instead" in capsys.readouterr().err


def test_a_budget_file_records_the_design(sample_csv: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    budget = str(tmp_path / "budget.json")
    assert main(["budget", budget, "--eps", "3"]) == 0
    args = ["logit", "y ~ x", "--data", sample_csv, "--eps", "1", *BOUND_ARGS, *DESIGN_ARGS, "--budget", budget]
    assert main(args) == 0
    capsys.readouterr()
    ledger = dpstats.PrivacyBudget.load(budget).ledger
    assert ledger["weights"].tolist() == ["wt; PSUs: psu within strata st"]
