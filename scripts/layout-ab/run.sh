#!/usr/bin/env bash
# Clean-build time of the SAME sources (this checkout's HEAD) with the layered src/CMakeLists.txt
# (one static library per layer + the include check) against the pre-structure three-library
# layout (src-CMakeLists-3lib.txt beside this script), ccache off, ninja -j2, alternated by round.
# Slow (two clean builds per round, ~8.5 min each on 2 cores). Usage: run.sh [ROUNDS] [LOG]
set -u
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${1:-1}; LOG=${2:-/tmp/build-layout-ab.log}; WORK=$(mktemp -d)
git clone -q "$ROOT" "$WORK/layered"; git clone -q "$ROOT" "$WORK/3lib"
cp "$HERE/src-CMakeLists-3lib.txt" "$WORK/3lib/src/CMakeLists.txt"
echo "commit $(git -C "$ROOT" rev-parse --short HEAD) $(date -u)" | tee -a "$LOG"
for r in $(seq 1 "$ROUNDS"); do
  order="3lib layered"; [ $((r % 2)) -eq 0 ] && order="layered 3lib"
  for v in $order; do
    d=$WORK/$v
    (cd "$d" && CCACHE_DISABLE=1 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null 2>&1)
    units=$(ninja -C "$d/build" -t commands | grep -c -- ' -c ')
    /usr/bin/time -f "%e %U %S" -o "$WORK/time" bash -c "CCACHE_DISABLE=1 ninja -C '$d/build' -j2 > '$d.buildlog' 2>&1"
    echo "round $r $v units $units rc $? wall/user/sys $(cat "$WORK/time") load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$LOG"
    rm -rf "$d/build"
  done
done
rm -rf "$WORK"
