#!/usr/bin/env bash
# Install everything dpstats and its tests need into ./.venv (safe to run twice).
# Needs: Python >= 3.11 with pip; on Debian, python3-venv is installed if missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
fresh=0
if [ ! -x .venv/bin/python ]; then
  fresh=1
  if ! "$PYTHON" -m venv .venv 2>/dev/null; then
    echo "setup: python3 -m venv failed; installing python3-venv with apt" >&2
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    rm -rf .venv
    "$PYTHON" -m venv .venv
  fi
fi
# pip byte-compiles every installed file in one process (two thirds of a fresh install's time here);
# a fresh venv is compiled once at the end instead, on every core (the last step below).
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile)
"${PIP[@]}" --upgrade pip
"${PIP[@]}" -e ".[dev]"

# --- pdflatex for the test that compiles dpstats.table's LaTeX (booktabs is in texlive-latex-recommended) ---
# Skipped with DPSTATS_SKIP_TEX=1; where apt cannot install it, that test is skipped with its reason.
TEX_DEBS="texlive-latex-base texlive-latex-recommended"
if [ "${DPSTATS_SKIP_TEX:-0}" != "1" ] && ! command -v pdflatex >/dev/null; then
  if command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "setup: installing from Debian: $TEX_DEBS" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $TEX_DEBS >/dev/null
  else
    echo "setup: pdflatex is missing and apt-get is not available: the LaTeX compile test is skipped" >&2
  fi
fi

# --- R bridge (r_bridge/): R from Debian, the pinned rpy2, the R package in r_bridge/lib ---
# (r-cran-aer: the CPS1985 data of vignettes/01_paper_workflow.md)
# Skipped with DPSTATS_SKIP_R=1, or (with a warning) where R is missing and apt cannot install it.
R_DEBS="r-base-core r-base-dev r-cran-reticulate r-cran-testthat r-cran-jsonlite r-cran-quantreg r-cran-aer r-cran-broom r-cran-knitr r-cran-rmarkdown r-cran-roxygen2 r-cran-survey pandoc"
if [ "${DPSTATS_SKIP_R:-0}" != "1" ]; then
  missing=""
  for pkg in $R_DEBS; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
  done
  if [ -n "$missing" ] && command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "setup: installing from Debian:$missing" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
  if command -v Rscript >/dev/null; then
    if ! .venv/bin/python - r_bridge/requirements-rpy2.txt 2>/dev/null <<'PY'; then
import sys, importlib.metadata as md
pins = [line.split("#")[0].strip() for line in open(sys.argv[1])]
sys.exit(0 if all(md.version(n) == v for n, v in (p.split("==") for p in pins if p)) else 1)
PY
      "${PIP[@]}" -r r_bridge/requirements-rpy2.txt
    fi
    bash r_bridge/install.sh
  else
    echo "setup: R is not installed (no apt-get?): the R bridge and its tests are skipped" >&2
  fi
fi

# --- the fresh venv's bytecode, compiled in parallel (what pip would have done file by file), ---
# --- leaving out the packages' own test suites (a third of the files; nothing imports them)    ---
if [ "$fresh" = 1 ]; then
  purelib=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  .venv/bin/python -m compileall -q -j 0 -x '/tests?/' "$purelib" >/dev/null \
    || echo "setup: some installed files did not byte-compile (as pip would, they compile when imported)" >&2
fi
