"""The R package (r_bridge/): R CMD check as CRAN runs it, and its testthat suite with Python.

Built with ``R CMD build`` (the vignette is knitted; no Python there, so its chunks
are shown, not run) and checked with ``R CMD check --no-manual`` (no LaTeX on the
machines) without any Python, as on CRAN: 0 errors, 0 warnings, 0 notes, every
test skipping instead of failing and the vignette rebuilt. The testthat suite then
runs with the project's Python (r_bridge/env.sh) through ``testthat::test_dir`` on
the package installed in r_bridge/lib (test-vignette.R runs the vignette's chunks
there). A second R CMD check, with Python, repeated the installation and the static
checks (233 s beside this one's 163 s in a fresh-clone run of the test command);
``test_dir`` runs what its tests step ran. CRAN's incoming checks are off: CRAN is
not reachable from here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from vignette_runner import r_environment

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("R") is None, reason="R is not installed")


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("rbuild")
    subprocess.run(["R", "CMD", "build", str(ROOT / "r_bridge")], cwd=where, check=True, capture_output=True)
    (built,) = where.glob("dpstats_*.tar.gz")
    return built


def _without_python() -> dict[str, str]:
    """The environment with no Python for reticulate to find dpstats in (as on CRAN)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RETICULATE_PYTHON", "R_LIBS")}
    return {**env, "R_PROFILE_USER": os.devnull}


@pytest.mark.slow
def test_r_cmd_check_without_python_is_clean_and_skips_rather_than_fails(tarball: Path) -> None:
    env = {**_without_python(), "_R_CHECK_CRAN_INCOMING_": "false", "_R_CHECK_SYSTEM_CLOCK_": "false"}
    done = subprocess.run(
        ["R", "CMD", "check", "--no-manual", tarball.name], cwd=tarball.parent, env=env, capture_output=True, text=True
    )
    log = done.stdout + done.stderr
    assert "Status: OK" in log, log[-3000:]
    tests = (tarball.parent / "dpstats.Rcheck" / "tests" / "testthat.Rout").read_text()
    assert "FAIL 0" in tests and "no Python with the dpstats package" in tests


@pytest.mark.slow
def test_testthat_suite_passes_with_python() -> None:
    """r_bridge/tests/testthat with the project's Python: nothing fails, and nothing skips."""
    subprocess.run(["bash", str(ROOT / "r_bridge" / "install.sh")], check=True, capture_output=True)
    env = r_environment()  # this Python and r_bridge/lib, as r_bridge/env.sh sets them
    code = (
        "res <- as.data.frame(testthat::test_dir('r_bridge/tests/testthat', package = 'dpstats', "
        "load_package = 'installed', reporter = 'check', stop_on_failure = FALSE)); "
        "cat(sprintf('\\ntestthat: %d passed, %d failed, %d skipped, %d errors\\n', "
        "sum(res$passed), sum(res$failed), sum(res$skipped), sum(res$error)))"
    )
    done = subprocess.run(["Rscript", "-e", code], cwd=ROOT, env=env, capture_output=True, text=True)
    output = done.stdout + done.stderr
    summary = re.search(r"testthat: (\d+) passed, (\d+) failed, (\d+) skipped, (\d+) errors", output)
    assert done.returncode == 0 and summary, output[-6000:]
    passed, failed, skipped, errors = map(int, summary.groups())
    assert failed == 0 and errors == 0 and passed >= 100, output[-6000:]
    assert skipped == 0, output[-6000:]  # with Python, R's packages and pdflatex set up, nothing skips


def test_man_and_namespace_are_what_roxygen2_generates(tmp_path: Path) -> None:
    """roxygen2 is the single source of man/ and NAMESPACE: regenerating them changes nothing."""
    copy = tmp_path / "r_bridge"
    shutil.copytree(ROOT / "r_bridge", copy, ignore=shutil.ignore_patterns("lib"))
    done = subprocess.run(
        ["Rscript", "-e", "roxygen2::roxygenise()"], cwd=copy, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for generated in ["NAMESPACE", *(f"man/{p.name}" for p in (ROOT / "r_bridge" / "man").glob("*.Rd"))]:
        assert (copy / generated).read_text() == (ROOT / "r_bridge" / generated).read_text(), generated
    assert sorted(p.name for p in (copy / "man").glob("*.Rd")) == sorted(
        p.name for p in (ROOT / "r_bridge" / "man").glob("*.Rd")
    )
