#!/usr/bin/env bash
# ctest's python_package (tests/CMakeLists.txt): installs src/python with the README's pip command
# (into a directory of the build tree, with --target, so no Python's site-packages is touched),
# then runs tests/python with that package and the build's CLI. Exit 77 (ctest: skipped) when the
# Python has no torch or no pytest.
#   run_suite.sh SOURCE_DIR BUILD_DIR [PYTHON]
set -euo pipefail
SRC=$1
BUILD=$2
PY=${3:-/usr/bin/python3}
if ! "$PY" -c 'import torch' 2>/dev/null; then echo "skipped: $PY has no torch"; exit 77; fi
if ! "$PY" -c 'import pytest' 2>/dev/null; then echo "skipped: $PY has no pytest (Debian: python3-pytest)"; exit 77; fi
TARGET=$BUILD/python-package
rm -rf "$TARGET"
start=$(date +%s)
GRASSAUDIT_PY_BUILD_DIR=$BUILD/python-build \
  "$PY" -m pip install --no-build-isolation --no-deps --quiet --disable-pip-version-check --target "$TARGET" "$SRC/src/python" 2>&1 \
  | grep -v "Running pip as the 'root' user" || true
[ -f "$TARGET/grassaudit/__init__.py" ] || { echo "python_package: pip install failed"; exit 1; }
echo "python_package: installed in $(( $(date +%s) - start )) s into $TARGET"
cd "$SRC/tests/python"
GRASSAUDIT_PY_TARGET=$TARGET GRASSAUDIT_CLI=$BUILD/grassaudit GRASSAUDIT_SOURCE_DIR=$SRC OMP_NUM_THREADS=1 \
  exec "$PY" -m pytest -q -p no:cacheprovider .
