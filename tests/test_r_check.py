"""R CMD check of the R package (r_bridge/): 0 errors, 0 warnings, 0 notes.

Built with ``R CMD build`` (the vignette is knitted; no Python there, so its chunks
are shown, not run) and checked with ``R CMD check --no-manual`` (no LaTeX on the
machines), once with the project's Python (r_bridge/env.sh) and once without any
Python. With Python, the check's tests step is the one place where the testthat
suite runs with Python (test-vignette.R runs the vignette's chunks there too);
without Python every test skips instead of failing, and the vignette is rebuilt
as CRAN rebuilds it. CRAN's incoming checks are off: CRAN is not reachable from here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("R") is None, reason="R is not installed")


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("rbuild")
    subprocess.run(["R", "CMD", "build", str(ROOT / "r_bridge")], cwd=where, check=True, capture_output=True)
    (built,) = where.glob("dpstats_*.tar.gz")
    return built


def _check(tarball: Path, env: dict[str, str], *options: str) -> str:
    env = {**env, "_R_CHECK_CRAN_INCOMING_": "false", "_R_CHECK_SYSTEM_CLOCK_": "false"}
    env.pop("R_LIBS", None)
    done = subprocess.run(
        ["R", "CMD", "check", "--no-manual", *options, tarball.name],
        cwd=tarball.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    return done.stdout + done.stderr


@pytest.mark.slow
def test_r_cmd_check_is_clean_with_python(tarball: Path) -> None:
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("the project's .venv is not set up")
    env = {**os.environ, "RETICULATE_PYTHON": str(python)}
    libdir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR') or '')"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    env["R_LD_LIBRARY_PATH"] = f"{libdir}:/usr/lib/R/lib:/usr/lib/x86_64-linux-gnu"
    # --no-vignettes: the tarball's tangled vignette code is its setup chunk alone (R CMD build ran
    # without Python, so every other chunk is commented out), and the rebuild would evaluate the
    # chunks with Python, which test-vignette.R does in the tests below. knitr's weaving runs in
    # R CMD build, and the without-Python check runs both vignette steps, as CRAN does.
    log = _check(tarball, env, "--no-vignettes")
    assert "Status: OK" in log, log[-3000:]
    tests = (tarball.parent / "dpstats.Rcheck" / "tests" / "testthat.Rout").read_text()
    counts = re.findall(r"\[ FAIL (\d+) \| WARN (\d+) \| SKIP (\d+) \| PASS (\d+) \]", tests)
    assert counts, tests[-6000:]
    failed, _, skipped, passed = map(int, counts[-1])
    assert failed == 0 and passed >= 100, tests[-6000:]
    assert skipped == 0, tests[-6000:]  # with Python, R's packages and pdflatex set up, nothing skips


@pytest.mark.slow
def test_r_cmd_check_without_python_skips_rather_than_fails(tarball: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RETICULATE_PYTHON"}
    env["R_PROFILE_USER"] = os.devnull
    log = _check(tarball, env)
    assert "Status: OK" in log, log[-3000:]
    tests = (tarball.parent / "dpstats.Rcheck" / "tests" / "testthat.Rout").read_text()
    assert "FAIL 0" in tests and "no Python with the dpstats package" in tests


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
