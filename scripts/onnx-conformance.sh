#!/usr/bin/env bash
# Runs ONNX's own backend tests (Debian's libonnx-testdata) through grassaudit's ONNX reader and
# prints "N passed, M failed" on its last line, after every skipped test with the op (or domain,
# opset, value type) that skipped it.
#
#   scripts/onnx-conformance.sh [BUILD_DIR] [-- onnx_conformance arguments: --only SUBSTRING, --verbose]
#
# BUILD_DIR defaults to build/. ONNX_TESTDATA overrides where the test data is looked for.
# MIN_PASSED (default: the floor below for this machine's testdata) fails the run on fewer passes.
# Exit 77 (skipped) when the test data is not installed.
set -euo pipefail
BUILD=${1:-build}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
BIN=$BUILD/tests/onnx_conformance
[ -x "$BIN" ] || { echo "onnx-conformance: $BIN not built (cmake --build $BUILD --target onnx_conformance)" >&2; exit 2; }
DATA=${ONNX_TESTDATA:-}
if [ -z "$DATA" ]; then
  for d in /usr/lib/python3/dist-packages/onnx/backend/test/data /usr/share/onnx/backend/test/data; do
    [ -d "$d/node" ] && { DATA=$d; break; }
  done
fi
[ -n "$DATA" ] || { echo "onnx-conformance: no ONNX backend test data (apt-get install libonnx-testdata)" >&2; exit 77; }
# The floor: at least this many tests pass (libonnx-testdata 1.12 has 932 node tests, 1.17 more).
MIN_PASSED=${MIN_PASSED:-400}
exec "$BIN" "$DATA" --min-passed "$MIN_PASSED" "$@"
