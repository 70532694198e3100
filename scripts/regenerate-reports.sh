#!/usr/bin/env bash
# Regenerates reports/README.md and reports/figures/ from the run artifacts in reports/runs/,
# the published numbers in reference/published/ and the throughput files in reports/bench/.
# Output is byte-identical for identical inputs, so a clean `git diff` means nothing changed.
# Usage: scripts/regenerate-reports.sh [extra grassaudit report flags]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
# A no-op when the binary is up to date.
cmake --build build --target grassaudit

build/grassaudit report --runs reports/runs --reference reference --out reports "$@"
echo "regenerate-reports: wrote reports/README.md"
