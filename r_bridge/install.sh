#!/usr/bin/env bash
# Install the R package in r_bridge/ into r_bridge/lib, only when its sources changed.
# Used by scripts/setup.sh and by tests/test_r_bridge.py. Needs R (r-base-core).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p lib
hash=$(find DESCRIPTION NAMESPACE LICENSE R man -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
stamp=lib/.dpstats-source-hash
if [ -f lib/dpstats/DESCRIPTION ] && [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ]; then
  exit 0
fi
if ! R CMD INSTALL --no-multiarch --library=lib . >lib/install.log 2>&1; then
  cat lib/install.log >&2
  echo "r_bridge/install.sh: R CMD INSTALL failed" >&2
  exit 1
fi
echo "$hash" >"$stamp"
