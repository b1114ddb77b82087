#!/usr/bin/env bash
# Install everything dpstats and its tests need into ./.venv (safe to run twice).
# Needs: Python >= 3.11 with pip; on Debian, python3-venv is installed if missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  if ! "$PYTHON" -m venv .venv 2>/dev/null; then
    echo "setup: python3 -m venv failed; installing python3-venv with apt" >&2
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    rm -rf .venv
    "$PYTHON" -m venv .venv
  fi
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
