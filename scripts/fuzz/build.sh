#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, -fsanitize=fuzzer,address,undefined, into build-fuzz/
# (or $1): the text readers and the model-archive reader need no LibTorch (src/util, src/text,
# src/formats/torch/zip_reader.cpp); the weights unpickler and the torch.export graph reader
# (TORCH_TARGETS) link the system LibTorch, which is not instrumented: the sanitizers watch our
# code and every byte it hands to LibTorch; the ONNX reader (ONNX_TARGETS) links LibTorch and
# libonnx's compiled schema (protobuf), neither instrumented.
#   scripts/fuzz/build.sh [OUT_DIR]
# Needs: clang (14+) and its compiler-rt (Debian: clang-14, libclang-rt-14-dev), plus the
# project's libfmt-dev, nlohmann-json3-dev, zlib1g-dev, libutf8proc-dev, libtorch-dev, libonnx-dev.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/build-fuzz}"
CXX="${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++ || command -v clang++-19 || true)}"
[ -n "$CXX" ] || { echo "fuzz/build.sh: clang++ not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }
mkdir -p "$OUT/obj"
FLAGS=(-std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
       -fno-sanitize-recover=undefined -I "$ROOT/src" -DGRASSAUDIT_SOURCE_DIR="\"$ROOT\"")
LIBS=(-lfmt -lz -lutf8proc)
TORCH_FLAGS=(-D_GLIBCXX_USE_CXX11_ABI=1 -isystem /usr/include/torch/csrc/api/include)
TORCH_LIBS=(-ltorch -ltorch_cpu -lc10)
TORCH_TARGETS=" fuzz_weights_unpickler fuzz_export_graph "
ONNX_FLAGS=(-DONNX_NAMESPACE=onnx -DONNX_ML=1)
ONNX_LIBS=(-lonnx -lonnx_proto -lprotobuf)
ONNX_TARGETS=" fuzz_onnx_model "
# Library objects once (fuzzer-no-link: instrumented, no main), then one binary per target.
jobs="${FUZZ_JOBS:-1}"
compile() {  # compile OBJS_VAR SRC... : compiles what is stale, appends every object to OBJS_VAR
  local -n into=$1
  shift
  for src in "$@"; do
    rel="${src#$ROOT/src/}"
    obj="$OUT/obj/${rel//\//_}.o"
    into+=("$obj")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find "$ROOT/src" -name '*.h' -newer "$obj" -print -quit)" ]; then
      echo "fuzz: compiling $rel"
      "$CXX" "${FLAGS[@]}" "${TORCH_FLAGS[@]}" "${ONNX_FLAGS[@]}" -c "$src" -o "$obj" &
      while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    fi
  done
}
objs=()
compile objs "$ROOT"/src/util/*.cpp "$ROOT"/src/text/*.cpp "$ROOT"/src/formats/torch/zip_reader.cpp \
  "$ROOT"/src/formats/graph/slot_lifetimes.cpp
torch_objs=()
compile torch_objs "$ROOT"/src/formats/torch/weights_unpickler.cpp "$ROOT"/src/formats/export/exported_program.cpp \
  "$ROOT"/src/formats/export/export_*.cpp "$ROOT"/src/formats/torch/torch2_ops.cpp
onnx_objs=()  # the reader without its audit targets (onnx_target, streaming_program)
compile onnx_objs "$ROOT"/src/formats/onnx/onnx_program.cpp "$ROOT"/src/formats/onnx/onnx_op.cpp \
  "$ROOT"/src/formats/onnx/onnx_ops_*.cpp "$ROOT"/src/formats/onnx/onnx_tensor.cpp
wait
for t in "$ROOT"/scripts/fuzz/fuzz_*.cpp; do
  name="$(basename "$t" .cpp)"
  echo "fuzz: linking $name"
  if [[ "$ONNX_TARGETS" == *" $name "* ]]; then
    "$CXX" "${FLAGS[@]}" "${TORCH_FLAGS[@]}" "${ONNX_FLAGS[@]}" -fsanitize=fuzzer "$t" "${onnx_objs[@]}" "${objs[@]}" \
      "${LIBS[@]}" "${TORCH_LIBS[@]}" "${ONNX_LIBS[@]}" -o "$OUT/$name"
  elif [[ "$TORCH_TARGETS" == *" $name "* ]]; then
    "$CXX" "${FLAGS[@]}" "${TORCH_FLAGS[@]}" -fsanitize=fuzzer "$t" "${torch_objs[@]}" "${objs[@]}" \
      "${LIBS[@]}" "${TORCH_LIBS[@]}" -o "$OUT/$name"
  else
    "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer "$t" "${objs[@]}" "${LIBS[@]}" -o "$OUT/$name"
  fi
done
echo "fuzz: targets in $OUT"
