"""Run the vignettes' code blocks; ``python tests/vignette_runner.py`` regenerates their checked-in outputs.

A vignette's ```python blocks run in one namespace with the working directory
as given; they write their tables and figures to ``tables/`` and ``figures/``
under it. Run from ``vignettes/`` (this script's default), they refresh the
copies checked in there; tests/test_vignettes.py runs them in a temporary
directory and compares. The ```r blocks run in a plain ``Rscript`` started
in the given directory with ``R_LIBS`` pointing at r_bridge/lib, as an R user
who installed the package would run them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VIGNETTES = sorted((ROOT / "vignettes").glob("[0-9][0-9]_*.md"))
OUTPUT_DIRS = ("tables", "figures")
_R_VARS = (
    "LD_LIBRARY_PATH",
    "R_HOME",
    "R_LIBS",
    "R_LIBS_USER",
    "R_LIBS_SITE",
    "R_LD_LIBRARY_PATH",
    "RETICULATE_PYTHON",
)
BASE_ENV = {k: v for k, v in os.environ.items() if k not in _R_VARS}
"""The environment at import, before an embedded R (rpy2) changed it, minus what would steer R elsewhere."""


def blocks(path: Path, language: str) -> list[str]:
    """The fenced blocks of one language (``python``, ``r``) of a Markdown file, in order."""
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(), flags=re.DOTALL)


@contextlib.contextmanager
def working_directory(path: Path):
    """Change the working directory for the duration of the block."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_python(path: Path, cwd: Path) -> dict:
    """Execute the vignette's python blocks in ``cwd``; return their namespace."""
    namespace: dict = {"__name__": "__vignette__"}
    with working_directory(cwd):
        for block in blocks(path, "python"):
            exec(compile(block, str(path), "exec"), namespace)
    return namespace


def run_r(path: Path, cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Execute the vignette's r blocks, joined, in one ``Rscript`` started in ``cwd``."""
    code = "\n".join(blocks(path, "r"))
    rscript = shutil.which("Rscript")
    if rscript is None:
        raise FileNotFoundError("Rscript is not on PATH")
    return subprocess.run(
        [rscript, "-e", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def r_environment() -> dict[str, str]:
    """R finding the package in r_bridge/lib and reticulate this Python, as r_bridge/env.sh sets it up.

    ``R_LD_LIBRARY_PATH`` puts this Python's libdir first, so that the Python R
    starts loads this interpreter's libpython (docs/R_SETUP.md, reticulate).
    """
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    return {
        **BASE_ENV,
        "R_LIBS": str(ROOT / "r_bridge" / "lib"),
        "RETICULATE_PYTHON": sys.executable,
        "R_LD_LIBRARY_PATH": ":".join(p for p in (libdir, "/usr/lib/R/lib", "/usr/lib/x86_64-linux-gnu") if p),
    }


def outputs(directory: Path, prefix: str) -> list[Path]:
    """The files a vignette wrote (named by its two-digit prefix), relative to ``directory``."""
    return sorted(
        p.relative_to(directory)
        for sub in OUTPUT_DIRS
        if (directory / sub).is_dir()
        for p in (directory / sub).glob(f"{prefix}_*")
    )


def main(names: list[str]) -> None:
    """Regenerate the outputs of the named vignettes (all by default) in vignettes/."""
    chosen = [p for p in VIGNETTES if not names or p.name in names or p.name[:2] in names]
    for path in chosen:
        print(f"running {path.name}", file=sys.stderr)
        run_python(path, path.parent)
        if blocks(path, "r"):
            done = run_r(path, path.parent, r_environment())
            if done.returncode != 0:
                raise SystemExit(done.stdout[-3000:] + done.stderr[-3000:])


if __name__ == "__main__":
    main(sys.argv[1:])
