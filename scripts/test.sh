#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite, privacy audits included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One process per core (pytest-xdist), each with one BLAS thread: the tests are many small
# single-threaded fits, and threaded BLAS in two processes on two cores only contend.
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Bytecode caches on: with PYTHONDONTWRITEBYTECODE set (as on some CI images) every worker and every
# Python started by a test (the CLI, R's reticulate, Dask workers) recompiled dpstats, and pytest
# re-rewrote the assertions of every test module (collection 58 -> 38 s here).
unset PYTHONDONTWRITEBYTECODE
exec .venv/bin/python -m pytest -n auto "$@"
