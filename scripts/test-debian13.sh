#!/usr/bin/env bash
# test-debian13.sh [CTEST_ARGS...]: builds grassaudit against Debian 13's LibTorch 2.6 inside the
# root of scripts/debian13-root.sh (made or reused first) and runs the whole test suite there.
#   test-debian13.sh                   configure, build, ctest -j2 (all but the tests named below)
#   test-debian13.sh -R audit          extra arguments go to ctest
#   test-debian13.sh --run CMD ARGS    run CMD in the root instead (from the checkout, the 2.6
#                                      build's folder in $GRASSAUDIT_BUILD): e.g. python3 with
#                                      Debian 13's torch 2.6, to make the 2.x fixtures
# Inside the root the checkout, the data folder, the build folder and the ccache folder keep their
# absolute paths (bind mounts in a private mount namespace, gone when this script ends, whatever
# ends it), so compile paths, test paths and the data lookup are the host's. The build folder is
# the checkout's build-debian13/ (never build/, which stays the host's LibTorch 1.13 build) and
# ccache CACHE/ccache-debian13 (CACHE as in debian13-root.sh), with CCACHE_BASEDIR the checkout's
# parent: compile commands name paths relative to the build folder, so another clone of the same
# sources (CI's) hits the cache a development build filled.
#
# Tests left out on 2.6 (SLOW_ON_26, run on the host's 1.13 build by the same .ci/run): the
# passes that kill a training run at every write point (hundreds of short runs; what they test
# is file I/O, not LibTorch); scripts/README.md "Supported LibTorch versions" says why.
# Environment: GRASSAUDIT_CACHE, GRASSAUDIT_DATA (passed through), DEBIAN13_BUILD (the build folder), JOBS (build, default nproc),
# CTEST_JOBS (default 2). Exit: the build's or ctest's status; 2 when the root cannot be made.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
log() { echo "test-debian13: $*" >&2; }
SLOW_ON_26=("CliCrashConsistency\\.(Lm|Snli)Run")

ROOT=$(bash "$HERE/debian13-root.sh" | tail -n1)
CACHE=$(dirname "$ROOT")
BUILD=${DEBIAN13_BUILD:-$SRC/build-debian13}
CCACHE=$CACHE/ccache-debian13
mkdir -p "$BUILD" "$CCACHE"
DATA=${GRASSAUDIT_DATA:-$SRC/../shared/data}
DATA=$(cd "$DATA" 2>/dev/null && pwd || true)   # absent data: the tests that need it say so

MODE=test
if [ "${1:-}" = --run ]; then
  shift
  [ $# -gt 0 ] || { log "error: --run needs a command"; exit 2; }
  MODE=run
fi
EXCLUDE=""
if [ ${#SLOW_ON_26[@]} -gt 0 ]; then EXCLUDE=$(IFS='|'; echo "${SLOW_ON_26[*]}"); fi

# The script run inside the root, as an argument: no file is written into the root.
INNER='
set -euo pipefail
cd "$SRC"
if [ "$MODE" = run ]; then exec "$@"; fi
t0=$SECONDS
cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$BUILD/configure.log" 2>&1 \
  || { tail -n 30 "$BUILD/configure.log"; exit 1; }
grep -E "^-- (Found Torch|Caffe2: |Found Python)" "$BUILD/configure.log" || true
cmake --build "$BUILD" -j "$JOBS"
echo "test-debian13: built in $((SECONDS - t0)) s (ccache: $(ccache -s 2>/dev/null | grep -m1 -iE "^ *hits" | tr -s " "))"
t1=$SECONDS
rc=0
if [ -n "$EXCLUDE" ]; then
  ctest --test-dir "$BUILD" -j "$CTEST_JOBS" --output-on-failure -E "$EXCLUDE" "$@" || rc=$?
else
  ctest --test-dir "$BUILD" -j "$CTEST_JOBS" --output-on-failure "$@" || rc=$?
fi
echo "test-debian13: ctest in $((SECONDS - t1)) s, exit $rc"
exit $rc
'

unshare --mount --propagation private bash -euc '
  ROOT=$1; SRC=$2; DATA=$3; BUILD=$4; CCACHE=$5; shift 5
  bindto() { mkdir -p "$ROOT$1"; mount --rbind "$1" "$ROOT$1"; }
  mount -t proc proc "$ROOT/proc"
  mount --rbind /dev "$ROOT/dev"
  bindto "$SRC"; bindto "$BUILD"; bindto "$CCACHE"
  [ -z "$DATA" ] || bindto "$DATA"
  exec chroot "$ROOT" "$@"
' _ "$ROOT" "$SRC" "$DATA" "$BUILD" "$CCACHE" \
  /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb \
    SRC="$SRC" BUILD="$BUILD" MODE="$MODE" EXCLUDE="$EXCLUDE" \
    JOBS="${JOBS:-$(nproc)}" CTEST_JOBS="${CTEST_JOBS:-2}" \
    CCACHE_DIR="$CCACHE" CCACHE_BASEDIR="$(dirname "$SRC")" GRASSAUDIT_BUILD="$BUILD" \
    ${GRASSAUDIT_DATA:+GRASSAUDIT_DATA="$DATA"} \
    bash -c "$INNER" inner "$@"
