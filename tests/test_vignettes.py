"""Every vignette runs as written, and writes exactly the tables and figures checked in next to it.

Each vignette runs in a temporary directory (tests/vignette_runner.py): its
python blocks in this process, its r blocks in a plain ``Rscript``. Its
fits use fixed ``random_state``s, so the tables it writes must equal the
checked-in copies character for character; the figures must be valid PNGs
(pixels are not compared: fonts and matplotlib versions move them). The
checked-in outputs are refreshed with ``python tests/vignette_runner.py``.
Vignettes that read R data (rpy2, AER) or run R blocks need R: without it they
skip, except under CI (``CI=true``) or ``DPSTATS_REQUIRE_R=1``, where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from vignette_runner import BASE_ENV, OUTPUT_DIRS, ROOT, VIGNETTES, blocks, outputs, r_environment, run_python, run_r

from dpstats import r_interop

pytest.importorskip("matplotlib")
TEXT_SUFFIXES = {".txt", ".md", ".tex", ".csv", ".html"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REQUIRE_R = os.environ.get("CI", "").lower() == "true" or os.environ.get("DPSTATS_REQUIRE_R") == "1"
R_PACKAGES = ("AER", "quantreg", "reticulate", "survey")


def _needs_r(path: Path) -> bool:
    code = "\n".join(blocks(path, "python"))
    return bool(blocks(path, "r")) or "r_interop" in code or "rpy2" in code


def _r_missing() -> str | None:
    """Why the R side cannot run here, or None."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return "R (Rscript)"
    if not (ROOT / "r_bridge" / "lib" / "dpstats").is_dir():
        return "the R package in r_bridge/lib"
    check = f"quit(status = !all(sapply(c({', '.join(map(repr, R_PACKAGES))}), requireNamespace, quietly = TRUE)))"
    if subprocess.run([rscript, "-e", check], env=BASE_ENV, capture_output=True, check=False).returncode != 0:
        return f"one of R's packages {', '.join(R_PACKAGES)}"
    try:
        r_interop.start_r()  # not a bare import: it keeps child Pythons on this libpython
    except ImportError:
        return "rpy2 (pinned in r_bridge/requirements-rpy2.txt)"
    return None


def _check_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100, f"{path}: {pixels.shape}"
    assert pixels.std() > 0.01, f"{path} is blank"


def test_vignettes_are_numbered_in_order() -> None:
    assert [p.name[:3] for p in VIGNETTES] == [f"{i:02d}_" for i in range(1, len(VIGNETTES) + 1)]


@pytest.mark.slow
@pytest.mark.parametrize("path", VIGNETTES, ids=lambda p: p.name)
def test_vignette_runs_and_writes_its_checked_in_outputs(path: Path, tmp_path: Path, capsys) -> None:
    assert blocks(path, "python"), f"{path.name} has no python block"
    if _needs_r(path) and (why := _r_missing()):
        message = f"{path.name} needs {why}: bash scripts/setup.sh installs it"
        if REQUIRE_R:
            pytest.fail(message)
        pytest.skip(message)
    run_python(path, tmp_path)
    if blocks(path, "r"):
        done = run_r(path, tmp_path, r_environment())
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    capsys.readouterr()

    stray = sorted(p.name for p in tmp_path.iterdir() if p.name not in OUTPUT_DIRS)
    assert not stray, f"{path.name} left files outside tables/ and figures/: {stray}"
    prefix = path.name[:2]
    produced = outputs(tmp_path, prefix)
    checked_in = outputs(path.parent, prefix)
    assert produced, f"{path.name} wrote no table or figure"
    assert produced == checked_in, "refresh with: python tests/vignette_runner.py " + prefix
    for name in produced:
        new, old = tmp_path / name, path.parent / name
        if name.suffix == ".png":
            _check_png(new)
            _check_png(old)
        else:
            assert name.suffix in TEXT_SUFFIXES, name
            assert new.read_text() == old.read_text(), f"{name} differs from what {path.name} writes"


def test_every_output_is_linked_from_its_vignette() -> None:
    for path in VIGNETTES:
        text = path.read_text()
        for name in outputs(path.parent, path.name[:2]):
            assert f"({name.as_posix()})" in text, f"{path.name} does not link {name}"
