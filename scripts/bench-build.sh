#!/usr/bin/env bash
# The clean build's compile times: configures a new build folder, builds TARGET (default
# grassaudit; "all" for everything) with ccache off, and prints from ninja's log the units, the
# seconds per library (the sum of its units' seconds, and the wall time of the whole build) and the
# ten slowest units. Extra arguments go to cmake's configure step (e.g. -DGRASSAUDIT_PCH=OFF).
#   bash scripts/bench-build.sh [TARGET] [BUILD_DIR] [-DOPTION=VALUE ...]
# The seconds are wall times of units run two at a time on 2 cores: compare builds run the same way
# on the same machine, nothing else running.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-grassaudit}
dir=${2:-/tmp/grassaudit-bench-build}
shift $(( $# < 2 ? $# : 2 ))
rm -rf "$dir"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
jobs=$(nproc)
t0=$(date +%s.%N)
if ! CCACHE_DISABLE=1 /usr/bin/time -f "%U %S" -o "$dir/cpu-seconds" cmake --build "$dir" --target "$target" -j "$jobs" \
    >"$dir/build.log" 2>&1; then
  tail -n 30 "$dir/build.log"
  echo "bench-build: the build failed (whole log: $dir/build.log)" >&2
  exit 1
fi
t1=$(date +%s.%N)
python3 scripts/ninja-log-table.py "$dir/.ninja_log" "$(python3 -c "print(f'{$t1 - $t0:.1f}')")" \
  "$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')" "$jobs"
read -r user sys < "$dir/cpu-seconds"
echo "CPU time of the build: ${user} s user, ${sys} s system"
