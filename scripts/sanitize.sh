#!/usr/bin/env bash
# Builds the test suite under AddressSanitizer + UndefinedBehaviorSanitizer (the top-level
# option GRASSAUDIT_SANITIZE=ON) in build-asan/ and runs it with ctest.
#   scripts/sanitize.sh                       every test target (slow: LibTorch tests too)
#   scripts/sanitize.sh test_text test_util   only these test executables (build and run)
# Env: JOBS (ninja and ctest parallelism, default 1), ASAN_BUILD_DIR (default build-asan).
# Exit status: ctest's (non-zero if any test failed or a sanitizer reported an error).
#
# Sanitizer settings:
#   * UBSan reports are fatal (halt_on_error=1): the CMake option compiles with recoverable UBSan,
#     so without this a report would only be printed.
#   * LeakSanitizer stays on. LibTorch, OpenMP and OpenBLAS are not instrumented and keep
#     process-lifetime allocations (thread pools, kernel registries, allocator caches) that LSan
#     reports at exit; scripts/sanitize-lsan.supp suppresses leaks ONLY when their allocation stack
#     runs through those libraries, so a leak in grassaudit's own code is still reported.
#   * The text/util/report tests do not link LibTorch and need none of this.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ASAN_BUILD_DIR:-$ROOT/build-asan}"
JOBS="${JOBS:-1}"
targets=("$@")

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRASSAUDIT_SANITIZE=ON >/dev/null
if [ ${#targets[@]} -eq 0 ]; then
  ninja -C "$BUILD" -j"$JOBS"
else
  ninja -C "$BUILD" -j"$JOBS" "${targets[@]}"
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/scripts/sanitize-lsan.supp:print_suppressions=0}"
export OMP_NUM_THREADS=1

cd "$BUILD"
if [ ${#targets[@]} -eq 0 ]; then
  exec ctest -j"$JOBS" --output-on-failure
fi
# Only the tests of the named executables: their ctest indices, from ctest's own JSON listing.
indices="$(ctest --show-only=json-v1 | /usr/bin/python3 -c '
import json, os, sys
wanted = set(sys.argv[1:])
tests = json.load(sys.stdin)["tests"]
idx = [str(i + 1) for i, t in enumerate(tests)
       if t.get("command") and os.path.basename(t["command"][0]) in wanted]
print(",".join(idx))' "${targets[@]}")"
if [ -z "$indices" ]; then
  echo "sanitize.sh: no tests found for ${targets[*]}" >&2
  exit 2
fi
exec ctest -j"$JOBS" --output-on-failure -I "0,0,0,$indices"
