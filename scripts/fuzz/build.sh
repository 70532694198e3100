#!/usr/bin/env bash
# Builds the libFuzzer targets for the text readers and the model-archive reader (no LibTorch:
# src/util, src/text and src/audit/zip_reader.cpp) with
# clang, -fsanitize=fuzzer,address,undefined, into build-fuzz/ (or $1).
#   scripts/fuzz/build.sh [OUT_DIR]
# Needs: clang (14+) and its compiler-rt (Debian: clang-14, libclang-rt-14-dev), plus the
# project's libfmt-dev, nlohmann-json3-dev, zlib1g-dev, libutf8proc-dev.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/build-fuzz}"
CXX="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++ || command -v clang++-19 || true)}"
[ -n "$CXX" ] || { echo "fuzz/build.sh: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
mkdir -p "$OUT/obj"
FLAGS=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -I "$ROOT/src" -DGRASSAUDIT_SOURCE_DIR="\"$ROOT\"")
LIBS=(-lfmt -lz -lutf8proc)
# Library objects once (fuzzer-no-link: instrumented, no main), then one binary per target.
objs=()
jobs="${FUZZ_JOBS:-1}"
for src in "$ROOT"/src/util/*.cpp "$ROOT"/src/text/*.cpp "$ROOT"/src/audit/zip_reader.cpp; do
  rel="${src#$ROOT/src/}"
  obj="$OUT/obj/${rel//\//_}.o"
  objs+=("$obj")
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find "$ROOT/src" -name '*.h' -newer "$obj" -print -quit)" ]; then
    echo "fuzz: compiling $rel"
    "$CXX" "${FLAGS[@]}" -c "$src" -o "$obj" &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  fi
done
wait
for t in "$ROOT"/scripts/fuzz/fuzz_*.cpp; do
  name="$(basename "$t" .cpp)"
  echo "fuzz: linking $name"
  "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer "$t" "${objs[@]}" "${LIBS[@]}" -o "$OUT/$name"
done
echo "fuzz: targets in $OUT"
