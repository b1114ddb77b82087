#!/usr/bin/env bash
# Set up (idempotent) and run the demo: DP regressions on AER's CPSSW8 survey and statsmodels' engel data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m dpstats demo "$@"
