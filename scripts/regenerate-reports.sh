#!/usr/bin/env bash
# Regenerates reports/README.md and reports/figures/ from the run artifacts in reports/runs/,
# the published numbers in reference/published/ and the throughput files in reports/bench/.
# Output is byte-identical for identical inputs, so a clean `git diff` means nothing changed.
# Usage: [BUILD_DIR=build-x] scripts/regenerate-reports.sh [extra grassaudit report flags]
#   BUILD_DIR: the CMake build folder whose grassaudit binary is used (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
# A no-op when the binary is up to date.
cmake --build "$build_dir" --target grassaudit

# The front page shows the report's headline: the block between its markers, copied by the report
# (tests/report/report_committed_test.cpp fails when the two differ).
"$build_dir/grassaudit" report --runs reports/runs --reference reference --out reports --front-page README.md "$@"
echo "regenerate-reports: wrote reports/README.md and README.md's headline"
