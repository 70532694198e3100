#!/usr/bin/env bash
# gpu-run.sh OUT_DIR: build grassaudit against the LibTorch inside the machine's own PyTorch
# (a CUDA wheel ships LibTorch headers and CMake files under torch/share/cmake) and train the
# paper presets for the three mixers, writing one run folder per (preset, mixer) under OUT_DIR.
# A run folder that already has summary.json is skipped; one with checkpoints/last.ckpt is
# resumed, so the script can be re-run after a time limit cut it off.
#
# The GPU machine cannot install packages. The C++ libraries it may lack travel as Debian .deb
# files, unpacked there with dpkg -x (never into /). Prepare them once on a Debian 12 machine
# with apt (this development machine), in the repository root:
#   mkdir -p .gpu-debs && echo /.gpu-debs/ >> .git/info/exclude
#   (cd .gpu-debs && apt-get download libfmt-dev libfmt9 libboost-program-options1.74-dev \
#      libboost-program-options1.74.0 libboost1.74-dev nlohmann-json3-dev libutf8proc-dev \
#      libutf8proc2 zlib1g-dev zlib1g)                              # about 12 MB of .deb files
# and the data (../shared/data beside the checkout does not travel):
#   mkdir -p .gpu-data && echo /.gpu-data/ >> .git/info/exclude
#   cp -r ../shared/data/wikitext-2 ../shared/data/bert-base-uncased .gpu-data/
# Carry .gpu-debs and .gpu-data with the working tree and run, in the repository root:
#   DEBS=.gpu-debs DATA_DIR=.gpu-data scripts/gpu-run.sh "$OUT/runs"
#
# Environment (all optional):
#   PRESETS    presets to run (default: paper-6l-L128 paper-6l-L128-alt paper-12l-L256)
#   MIXERS     mixers (default: past attention future)
#   TOKENIZER  word | wordpiece (default: wordpiece, the paper's setting)
#   DEVICE     cuda | cpu (default: cuda)
#   EPOCHS     override the presets' 30 epochs;  MAX_TOKENS  stop each run after N tokens
#   DEBS       folder of .deb files to unpack (default: .gpu-debs if present)
#   DEPS       where to unpack them (default: /tmp/grassaudit-deps)
#   DATA_DIR   folder holding wikitext-2/ and bert-base-uncased/ (default: grassaudit's lookup)
#   TORCH      python | system: LibTorch from python3's torch, or the system's (default: python)
#   BUILD_DIR  (default: build-gpu);  THREADS  intra-op threads (default: all cores)
#   TINY=1     a CPU check of this script: system LibTorch, the tiny preset, --max-tokens 2048,
#              device cpu, build dir build-gpu-tiny (seconds per run, after the build)
set -euo pipefail

OUT=${1:?usage: scripts/gpu-run.sh OUT_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

if [ "${TINY:-0}" = 1 ]; then
  PRESETS=${PRESETS:-tiny}
  DEVICE=${DEVICE:-cpu}
  MAX_TOKENS=${MAX_TOKENS:-2048}
  TORCH=${TORCH:-system}
  BUILD_DIR=${BUILD_DIR:-build-gpu-tiny}
fi
PRESETS=${PRESETS:-paper-6l-L128 paper-6l-L128-alt paper-12l-L256}
MIXERS=${MIXERS:-past attention future}
TOKENIZER=${TOKENIZER:-wordpiece}
DEVICE=${DEVICE:-cuda}
TORCH=${TORCH:-python}
BUILD_DIR=${BUILD_DIR:-build-gpu}
DEPS=${DEPS:-/tmp/grassaudit-deps}
if [ -z "${DEBS:-}" ] && [ -d .gpu-debs ]; then DEBS=.gpu-debs; fi

log() { echo "gpu-run: $*" >&2; }

# 1. Libraries from .deb files: unpack, then make the tree relocatable (absolute symlinks such
#    as libz.so -> /lib/.../libz.so.1.2.13 point into the tree; pkg-config prefixes too).
PREFIXES=()
if [ -n "${DEBS:-}" ]; then
  shopt -s nullglob
  debs=("$DEBS"/*.deb)
  shopt -u nullglob
  [ ${#debs[@]} -gt 0 ] || { log "error: no .deb files in $DEBS"; exit 2; }
  mkdir -p "$DEPS"
  for d in "${debs[@]}"; do dpkg -x "$d" "$DEPS"; done
  while IFS= read -r link; do
    target=$(readlink "$link")
    case "$target" in /*) [ -e "$DEPS$target" ] && ln -sfn "$DEPS$target" "$link" ;; esac
  done < <(find "$DEPS" -type l)
  while IFS= read -r pc; do
    sed -i "s|^prefix=/usr\$|prefix=$DEPS/usr|" "$pc"
  done < <(find "$DEPS" -name '*.pc')
  PREFIXES+=("$DEPS/usr")
  export PKG_CONFIG_PATH="$DEPS/usr/lib/x86_64-linux-gnu/pkgconfig:$DEPS/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu:$DEPS/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "unpacked ${#debs[@]} packages into $DEPS"
fi

# 2. LibTorch.
if [ "$TORCH" = python ]; then
  TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
    { log "error: python3 cannot import torch (set TORCH=system to use the system LibTorch)"; exit 2; }
  python3 -c 'import torch; print("gpu-run: torch", torch.__version__, "cuda", torch.version.cuda,
              "available", torch.cuda.is_available(), "cxx11 abi", torch.compiled_with_cxx11_abi())' >&2
  if [ "$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')" != 1 ]; then
    log "error: this torch was built with the pre-C++11 string ABI; the Debian libraries need the new one"
    exit 2
  fi
  PREFIXES=("$TORCH_PREFIX" "${PREFIXES[@]}")
  TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# 3. Build (no tests: GoogleTest and rapidcheck are not needed there).
GEN=(-G "Unix Makefiles")
command -v ninja >/dev/null && GEN=(-G Ninja)
PREFIX_PATH=$(IFS=';'; echo "${PREFIXES[*]:-}")
cmake -S "$ROOT" -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  ${PREFIX_PATH:+-DCMAKE_PREFIX_PATH="$PREFIX_PATH"} >"$OUT/cmake.log" 2>&1 ||
  { tail -30 "$OUT/cmake.log" >&2; log "error: cmake failed (full log: $OUT/cmake.log)"; exit 1; }
cmake --build "$BUILD_DIR" --target grassaudit -j "$(nproc)" >"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log" >&2; log "error: build failed (full log: $OUT/build.log)"; exit 1; }
BIN="$ROOT/$BUILD_DIR/grassaudit"
log "built $BIN"

# 4. Runs.
common=(--device "$DEVICE")
[ -n "${THREADS:-}" ] && common+=(--threads "$THREADS")
[ -n "${DATA_DIR:-}" ] && common+=(--data-dir "$DATA_DIR")
status=0
for preset in $PRESETS; do
  for mixer in $MIXERS; do
    run="$OUT/$preset-$TOKENIZER-$mixer"
    if [ -f "$run/summary.json" ]; then
      log "$run: done already, skipped"
      continue
    fi
    args=()
    if [ -f "$run/checkpoints/last.ckpt" ]; then
      args=(train --resume "$run/checkpoints/last.ckpt" --out "$run")
      [ -n "${MAX_TOKENS:-}" ] && args+=(--max-tokens "$MAX_TOKENS")
    else
      args=(train --mixer "$mixer" --preset "$preset" --tokenizer "$TOKENIZER" --out "$run")
      [ -n "${EPOCHS:-}" ] && args+=(--epochs "$EPOCHS")
      [ -n "${MAX_TOKENS:-}" ] && args+=(--max-tokens "$MAX_TOKENS")
    fi
    log "grassaudit ${args[*]} ${common[*]}"
    mkdir -p "$run"
    if ! "$BIN" "${args[@]}" "${common[@]}" > >(tee -a "$run/train.log") 2> >(tee -a "$run/train.err" >&2); then
      log "error: $run failed (see $run/train.err)"
      status=1
    fi
  done
done
exit $status
