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

"$build_dir/grassaudit" report --runs reports/runs --reference reference --out reports "$@"
echo "regenerate-reports: wrote reports/README.md"
# The front page shows the report's headline: the block between the markers, copied as it is
# (tests/report/report_committed_test.cpp fails when the two differ).
python3 - <<'PY'
import re
begin, end = "<!-- report-headline:begin -->", "<!-- report-headline:end -->"
report = open("reports/README.md", encoding="utf-8").read()
m = re.search(re.escape(begin) + r".*?" + re.escape(end) + r"\n", report, re.S)
front = open("README.md", encoding="utf-8").read()
n = re.search(re.escape(begin) + r".*?" + re.escape(end) + r"\n", front, re.S)
if m and n:
    open("README.md.tmp", "w", encoding="utf-8").write(front[:n.start()] + m.group(0) + front[n.end():])
    import os
    os.replace("README.md.tmp", "README.md")
    print("regenerate-reports: README.md's headline is the report's")
PY
