#!/usr/bin/env bash
# gpu-run.sh OUT_DIR: the one command for a lent GPU machine.
#
# On the device it (each step timed in OUT_DIR/gpu-run.log, "[  12s]" = seconds since the start):
#   1. refuses at once, exit 2 and one line, when an input is missing: the data, the carried .deb
#      files, python3's torch (with CUDA), the CUDA compiler LibTorch's CMake config needs, cmake,
#      a C++ compiler;
#   2. unpacks the carried .deb files (fmt, Boost.Program_options, nlohmann-json, utf8proc, zlib,
#      RapidCheck (the audit's property search links it),
#      pkgconf) into DEPS and makes that tree relocatable;
#   3. configures and builds the CLI against the LibTorch inside python3's PyTorch (CUDA), with all
#      cores, in BUILD_DIR (ignored by git, so a warm machine's second call rebuilds nothing);
#   4. phase A: the three mixers at PRESET_A (paper-6l-L128), one process each, concurrently, each
#      with --threads cores/3 and --time-budget = what is left of DEADLINE minus PACK_MARGIN and
#      RESERVE_B, so every run ends with its closing validation, audit and test evaluation (valid,
#      gated figures) even when its 30 epochs do not fit; each run's first step time and the
#      projection the trainer prints after 3 steps are copied into the log as they appear. A run
#      still alive GRACE seconds after its budget gets SIGTERM (the trainer saves last.ckpt and
#      stops), SIGKILL 10 s later;
#   5. phase B: the same for PRESET_B (paper-12l-L256) with what is left, if that is >= MIN_B
#      seconds; otherwise it is skipped, and the log says so;
#   6. packs after each phase, so a call cut off later still brings back what was done: OUT_DIR
#      gets at most 5 files (never more than 8, checked): gpu-run.log, build.log (cmake and
#      compiler output, where each library was found, ldd), summaries.json (every run's
#      summary.json, or why it has none) and one runs-<preset>.tar.gz per phase holding its run
#      folders (command.txt, config.json, metrics.jsonl, audit.json, summary.json, train.log,
#      train.err) without checkpoints/.
# Exit status: 0 every run wrote summary.json; 1 a build or a run failed; 2 an input is missing.
#
# --- Prepare, HERE (the development machine), once, in the repository root ---
#   scripts/gpu-run.sh --prepare
# downloads the .deb files into .gpu-debs (apt-get download, about 12 MB), copies WikiText-2 and
# the BERT vocabulary into .gpu-data (about 13 MB; from SOURCE_DATA, default ../shared/data, which
# does not travel), adds both folders to .git/info/exclude, checks the data's SHA256SUMS and that
# the working tree plus both folders stay well under the 64 MiB a device call carries (refuses
# above 48 MiB), and prints the device call:
#   command:  DEBS=.gpu-debs DATA_DIR=.gpu-data scripts/gpu-run.sh "$OUT"
#   carry:    [".gpu-debs", ".gpu-data"]      timeout_s: 600 (the script ends by DEADLINE, 540 s)
#
# --- What is assumed about the device (/work/.library/device/KINDS.md, read 2026-11) ---
# python3 is /opt/torch/.venv/bin/python3 with torch 2.11.0+cu130 (CXX11 ABI; its LibTorch and
# CMake files under torch/share/cmake = torch.utils.cmake_prefix_path); nvcc 13.0 (seen), cmake and
# ninja (pip), a C++ compiler (nvcc's host compiler). LibTorch's CMake config for a CUDA build
# calls find_package(CUDAToolkit) and enable_language(CUDA), both of which need nvcc: the script
# finds it ($CUDACXX, PATH, /usr/local/cuda/bin, python's nvidia/cuda_nvcc) and passes CUDACXX,
# CUDAToolkit_ROOT and CMAKE_CUDA_COMPILER, plus TORCH_CUDA_ARCH_LIST=9.0 (H200; skips the GPU
# probe the config runs otherwise). Without nvcc it refuses (exit 2) rather than fail in cmake.
# cuDNN is not needed (no convolutions); the config's "cannot find cuDNN" warning is harmless.
# LibTorch headers that require C++20 (Debian sid's 2.14.1 does, trixie's 2.6 does not; reports
# put the switch at 2.12-2.14) are detected from ATen/ATen.h and get -DCMAKE_CXX_STANDARD=20
# (every unit compiles as C++20 against 2.14.1: scripts/check-libtorch2.sh with LT2_SUITE=sid and
# a -std=gnu++20 compile database). CUDA 13 has no libnvToolsExt: see the NVTX shim below. Ubuntu's linker drops unreferenced libraries (--as-needed), which
# would drop libtorch_cuda.so and leave CUDA "not available": linked with --no-as-needed.
#
# Environment (all optional):
#   DEADLINE      seconds for the whole command (default 540: a 600 s call with room to spare)
#   PACK_MARGIN   seconds kept free at the end for stopping stragglers and packing (default 50)
#   GRACE         seconds a run may overrun its budget before SIGTERM (default 30). Before a run's
#                 first validation the trainer estimates its closing audit from the training rate
#                 (the gate as ~2% of an epoch, measured on CPU runs); on a GPU the gate still runs
#                 on the CPU, so that estimate is low, and only this grace absorbs it.
#   RESERVE_B     seconds kept from phase A for phase B (default 0: B runs only if A ends early)
#   MIN_A, MIN_B  smallest useful budget of a phase (defaults 60 and 240 s), else skipped. A run
#                 needs its budget to cover at least one closing validation + test evaluation,
#                 whose audits run on the CPU: below that the trainer stops at once and still
#                 overruns (seen in TINY with cpu-small at 181 s on 2 cores), and is SIGTERMed.
#   PRESET_A, PRESET_B   (defaults paper-6l-L128, paper-12l-L256); MIXERS (past attention future)
#   TOKENIZER     word | wordpiece (default wordpiece, the paper's)
#   PRECISION     fp32 | tf32 | bf16 (default: the CLI's, tf32 on CUDA)
#   EPOCHS, MAX_TOKENS   override the presets' 30 epochs / stop each run after N tokens
#   PATIENCE             stop a run after this many epochs without a better validation (default 3;
#                        0: off), so each run ends at its best epoch as the report's comparison wants
#   DEVICE        cuda | cpu (default cuda);  THREADS  per run (default cores / number of mixers)
#   DEBS          folder of .deb files (default .gpu-debs; required for TORCH=python, "none" skips)
#   DEPS          where they are unpacked (default /tmp/grassaudit-deps)
#   DATA_DIR      folder holding wikitext-2/ and bert-base-uncased/ (default .gpu-data)
#   TORCH         python | system (default python: python3's torch; system: find_package's own)
#   PYTHON        (default python3);  BUILD_DIR (default build-gpu)
#   WORK          run folders and token cache (default /tmp/grassaudit-gpu-run); a run folder
#                 with summary.json is skipped, one with checkpoints/last.ckpt resumed
#   TINY=1        the CPU dry run of all of the above: system LibTorch, DEVICE=cpu, PRESET_A and
#                 PRESET_B tiny (phase B's folders end in -b), BUILD_DIR=build-gpu-tiny,
#                 DEADLINE=300 with RESERVE_B=150, MIN_A=30, MIN_B=60, and
#                 WORK=/tmp/grassaudit-gpu-run-tiny (delete it for a fresh run). Its clock starts
#                 after the build (a cold build took 876 s here on 2 cores; on the device's 16 an
#                 estimated 2-3 minutes, counted in DEADLINE), and it unpacks and uses the carried
#                 .deb files like the device (build.log shows where each library was found).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

die() { echo "gpu-run: error: $*" >&2; exit 2; }
DEB_PACKAGES="libfmt-dev libfmt9 libboost-program-options1.74-dev libboost-program-options1.74.0
  libboost1.74-dev nlohmann-json3-dev libutf8proc-dev libutf8proc2 zlib1g-dev zlib1g pkgconf-bin libpkgconf3
  librapidcheck-dev"

# ---------------------------------------------------------------------------------------------
# --prepare: run here, not on the device.
if [ "${1:-}" = --prepare ]; then
  SOURCE_DATA=${SOURCE_DATA:-${GRASSAUDIT_DATA:-$ROOT/../shared/data}}
  command -v apt-get >/dev/null || die "--prepare needs apt-get (a Debian 12 machine)"
  for f in wikitext-2/wiki.train.tokens wikitext-2/wiki.valid.tokens wikitext-2/wiki.test.tokens \
           wikitext-2/SHA256SUMS bert-base-uncased/vocab.txt bert-base-uncased/SHA256SUMS; do
    [ -f "$SOURCE_DATA/$f" ] || die "--prepare: $SOURCE_DATA/$f missing (set SOURCE_DATA to the folder holding wikitext-2/)"
  done
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  touch "$exclude"
  for d in /.gpu-debs/ /.gpu-data/; do grep -qxF "$d" "$exclude" || echo "$d" >>"$exclude"; done
  mkdir -p .gpu-debs .gpu-data
  missing=()
  for p in $DEB_PACKAGES; do compgen -G ".gpu-debs/${p}_*.deb" >/dev/null || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    (cd .gpu-debs && apt-get download "${missing[@]}") || die "--prepare: apt-get download ${missing[*]} failed"
  fi
  rm -rf .gpu-data/wikitext-2 .gpu-data/bert-base-uncased
  cp -r "$SOURCE_DATA/wikitext-2" "$SOURCE_DATA/bert-base-uncased" .gpu-data/
  for d in wikitext-2 bert-base-uncased; do
    (cd ".gpu-data/$d" && sha256sum --quiet -c SHA256SUMS) || die "--prepare: .gpu-data/$d fails its SHA256SUMS"
  done
  git check-ignore -q .gpu-debs/x.deb && git check-ignore -q .gpu-data/x ||
    die "--prepare: .gpu-debs or .gpu-data is not ignored by git (check $exclude)"
  tree_bytes=$(git ls-files -z -co --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  carried_bytes=$(du -cb .gpu-debs .gpu-data | tail -1 | cut -f1)
  total=$((tree_bytes + carried_bytes))
  mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
  echo "gpu-run: prepared: working tree $(mib "$tree_bytes") + .gpu-debs $(du -sh .gpu-debs | cut -f1)" \
       "+ .gpu-data $(du -sh .gpu-data | cut -f1) = $(mib "$total") of the 64 MiB a call carries"
  [ "$total" -le $((48 * 1048576)) ] || die "--prepare: $(mib "$total") is too close to the 64 MiB limit"
  echo "gpu-run: device call: command 'DEBS=.gpu-debs DATA_DIR=.gpu-data scripts/gpu-run.sh \"\$OUT\"'," \
       "carry [\".gpu-debs\", \".gpu-data\"], timeout_s 600"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
OUT=${1:-}
[ -n "$OUT" ] || die "usage: scripts/gpu-run.sh OUT_DIR  (or --prepare, here, first)"
START=$SECONDS
elapsed() { echo $((SECONDS - START)); }

if [ "${TINY:-0}" = 1 ]; then
  DEVICE=${DEVICE:-cpu}
  TORCH=${TORCH:-system}
  PRESET_A=${PRESET_A:-tiny}
  PRESET_B=${PRESET_B:-tiny}
  BUILD_DIR=${BUILD_DIR:-build-gpu-tiny}
  DEADLINE=${DEADLINE:-300}
  RESERVE_B=${RESERVE_B:-150}
  MIN_B=${MIN_B:-60}
  MIN_A=${MIN_A:-30}
  WORK=${WORK:-/tmp/grassaudit-gpu-run-tiny}
  if [ -z "${DATA_DIR:-}" ] && [ ! -d .gpu-data ]; then DATA_DIR=${GRASSAUDIT_DATA:-$ROOT/../shared/data}; fi
fi
DEADLINE=${DEADLINE:-540}
PACK_MARGIN=${PACK_MARGIN:-50}
GRACE=${GRACE:-30}
RESERVE_B=${RESERVE_B:-0}
MIN_A=${MIN_A:-60}
MIN_B=${MIN_B:-240}
PRESET_A=${PRESET_A:-paper-6l-L128}
PRESET_B=${PRESET_B:-paper-12l-L256}
MIXERS=${MIXERS:-past attention future}
TOKENIZER=${TOKENIZER:-wordpiece}
DEVICE=${DEVICE:-cuda}
TORCH=${TORCH:-python}
PYTHON=${PYTHON:-python3}
BUILD_DIR=${BUILD_DIR:-build-gpu}
DEPS=${DEPS:-/tmp/grassaudit-deps}
WORK=${WORK:-/tmp/grassaudit-gpu-run}
DATA_DIR=${DATA_DIR:-.gpu-data}
if [ -z "${DEBS:-}" ]; then
  if [ -d .gpu-debs ]; then DEBS=.gpu-debs; elif [ "$TORCH" = python ]; then DEBS=.gpu-debs; else DEBS=none; fi
fi

# 1. Inputs: each missing one is a one-line refusal before anything is spent.
for v in DEADLINE PACK_MARGIN GRACE RESERVE_B MIN_A MIN_B; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a whole number of seconds, got '${!v}'"
done
[ "$DEADLINE" -gt "$PACK_MARGIN" ] || die "DEADLINE ($DEADLINE) must exceed PACK_MARGIN ($PACK_MARGIN)"
case "$DEVICE" in cuda|cpu) ;; *) die "DEVICE must be cuda or cpu, got '$DEVICE'" ;; esac
case "$TORCH" in python|system) ;; *) die "TORCH must be python or system, got '$TORCH'" ;; esac
case "$TOKENIZER" in word|wordpiece) ;; *) die "TOKENIZER must be word or wordpiece, got '$TOKENIZER'" ;; esac
[ -z "${PRECISION:-}" ] || case "$PRECISION" in fp32|tf32|bf16) ;; *) die "PRECISION must be fp32, tf32 or bf16, got '$PRECISION'" ;; esac
read -r -a MIXER_LIST <<<"$MIXERS"
[ ${#MIXER_LIST[@]} -ge 1 ] || die "MIXERS is empty"
for f in wikitext-2/wiki.train.tokens wikitext-2/wiki.valid.tokens wikitext-2/wiki.test.tokens bert-base-uncased/vocab.txt; do
  [ -f "$DATA_DIR/$f" ] || die "$DATA_DIR/$f missing (run scripts/gpu-run.sh --prepare here and carry .gpu-data)"
done
DATA_DIR=$(cd "$DATA_DIR" && pwd)
DEB_FILES=()
if [ "$DEBS" != none ]; then
  [ -d "$DEBS" ] || die "$DEBS missing: the .deb files (run scripts/gpu-run.sh --prepare here and carry .gpu-debs; DEBS=none to use the system's libraries)"
  shopt -s nullglob
  DEB_FILES=("$DEBS"/*.deb)
  shopt -u nullglob
  [ ${#DEB_FILES[@]} -gt 0 ] || die "no .deb files in $DEBS"
  command -v dpkg-deb >/dev/null || die "dpkg-deb not found: cannot unpack $DEBS"
fi
for tool in cmake tar gzip timeout; do command -v "$tool" >/dev/null || die "$tool not found"; done
CXX_BIN=${CXX:-$(command -v c++ || command -v g++ || true)}
[ -n "$CXX_BIN" ] || die "no C++ compiler (c++ or g++) on PATH; set CXX"
NPROC=$(nproc)
THREADS=${THREADS:-$(( NPROC / ${#MIXER_LIST[@]} > 0 ? NPROC / ${#MIXER_LIST[@]} : 1 ))}

TORCH_ARGS=()
TORCH_PREFIX=
if [ "$TORCH" = python ]; then
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set PYTHON, or TORCH=system)"
  info=$("$PYTHON" - <<'EOF' 2>/dev/null
import os, shlex, torch
def put(k, v): print(k + "=" + shlex.quote(str(v)))
put("TORCH_VERSION", torch.__version__)
put("TORCH_CUDA", torch.version.cuda or "")
put("TORCH_ABI", int(getattr(torch, "compiled_with_cxx11_abi", lambda: True)()))
put("TORCH_PREFIX", torch.utils.cmake_prefix_path)
put("TORCH_DIR", os.path.dirname(torch.__file__))
put("TORCH_GPU", int(torch.cuda.is_available()))
EOF
  ) || die "$PYTHON cannot import torch (set PYTHON, or TORCH=system)"
  eval "$info"
  [ "$TORCH_ABI" = 1 ] || die "torch $TORCH_VERSION uses the pre-C++11 string ABI; the Debian libraries need the new one"
  [ -f "$TORCH_PREFIX/Torch/TorchConfig.cmake" ] || die "$TORCH_PREFIX/Torch/TorchConfig.cmake missing: this torch ships no LibTorch CMake files"
  if [ "$DEVICE" = cuda ]; then
    [ -n "$TORCH_CUDA" ] || die "torch $TORCH_VERSION is a CPU build (torch.version.cuda is None)"
    NVCC=${CUDACXX:-$(command -v nvcc || true)}
    for c in /usr/local/cuda/bin/nvcc "$TORCH_DIR/../nvidia/cuda_nvcc/bin/nvcc" "$TORCH_DIR/../nvidia/cu13/bin/nvcc"; do
      [ -n "$NVCC" ] || { [ -x "$c" ] && NVCC=$c; } || true
    done
    [ -n "$NVCC" ] && [ -x "$NVCC" ] ||
      die "no nvcc (CUDACXX, PATH, /usr/local/cuda/bin, python's nvidia/cuda_nvcc): LibTorch's CMake config needs the CUDA toolkit; set CUDACXX=/path/to/nvcc"
    NVCC=$(readlink -f "$NVCC")
    CUDA_ROOT=$(dirname "$(dirname "$NVCC")")
    export CUDACXX=$NVCC CUDA_HOME=${CUDA_HOME:-$CUDA_ROOT} CUDA_PATH=${CUDA_PATH:-$CUDA_ROOT}
    export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
    TORCH_ARGS+=(-DCMAKE_CUDA_COMPILER="$NVCC" -DCUDAToolkit_ROOT="$CUDA_ROOT" -DCMAKE_CUDA_ARCHITECTURES=90)
  fi
  # Keep libtorch_cuda.so (referenced by no symbol of ours) in DT_NEEDED under --as-needed.
  TORCH_ARGS+=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed")
  # No ONNX reader: Debian's libonnx needs Debian's libprotobuf, which would share the process
  # with the protobuf built into pip's libtorch; the runs here train and audit, they read no .onnx.
  TORCH_ARGS+=(-DGRASSAUDIT_ONNX=OFF)
fi

mkdir -p "$OUT" "$WORK/runs"
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)
LOG=$OUT/gpu-run.log
BUILD_LOG=$OUT/build.log
: >"$LOG"
log() { local m; m=$(printf '[%4ss] %s' "$(elapsed)" "$*"); echo "$m" >&2; echo "$m" >>"$LOG"; }
log "gpu-run: $(uname -n), $NPROC cores, DEVICE=$DEVICE TORCH=$TORCH DEADLINE=${DEADLINE}s$([ "${TINY:-0}" = 1 ] && echo ' (TINY: the clock starts after the build)')"
if [ "$TORCH" = python ]; then
  log "torch $TORCH_VERSION (CUDA ${TORCH_CUDA:-none}, GPU visible: $TORCH_GPU) at $TORCH_DIR"
  [ -n "${NVCC:-}" ] && log "CUDA compiler $NVCC ($("$NVCC" --version | grep -o 'release [0-9.]*' || echo '?')), CUDAToolkit_ROOT $CUDA_ROOT"
fi
command -v nvidia-smi >/dev/null && log "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"

# 2. The carried libraries: unpack, then make the tree relocatable (absolute symlinks such as
#    libz.so -> /lib/.../libz.so.1.2.13 point into the tree; pkg-config prefixes too).
PREFIXES=()
CMAKE_DEP_ARGS=()
if [ ${#DEB_FILES[@]} -gt 0 ]; then
  t=$SECONDS
  # The same .deb files unpacked here before (a warm machine's second call): kept.
  stamp=$(for d in "${DEB_FILES[@]}"; do echo "$(basename "$d") $(stat -c %s "$d")"; done)
  if [ "$(cat "$DEPS/.gpu-run-stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$DEPS"
    mkdir -p "$DEPS"
    for d in "${DEB_FILES[@]}"; do dpkg-deb -x "$d" "$DEPS"; done
    while IFS= read -r link; do
      target=$(readlink "$link")
      case "$target" in /*) [ -e "$DEPS$target" ] && ln -sfn "$DEPS$target" "$link" ;; esac
    done < <(find "$DEPS" -type l)
    while IFS= read -r pc; do sed -i "s|^prefix=/usr\$|prefix=$DEPS/usr|" "$pc"; done < <(find "$DEPS" -name '*.pc')
    echo "$stamp" >"$DEPS/.gpu-run-stamp"
  fi
  PREFIXES+=("$DEPS/usr")
  export PKG_CONFIG_PATH="$DEPS/usr/lib/x86_64-linux-gnu/pkgconfig:$DEPS/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  if [ -x "$DEPS/usr/bin/pkgconf" ]; then
    # The carried pkgconf, with its library found only by it (nothing else sees DEPS's libraries).
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s/usr/bin/pkgconf "$@"\n' \
      "$DEPS" "$DEPS" >"$DEPS/pkg-config"
    chmod +x "$DEPS/pkg-config"
    CMAKE_DEP_ARGS+=(-DPKG_CONFIG_EXECUTABLE="$DEPS/pkg-config")
  fi
  log "${#DEB_FILES[@]} .deb files unpacked into $DEPS ($((SECONDS - t)) s; kept when unchanged)"
fi
[ -n "$TORCH_PREFIX" ] && PREFIXES=("$TORCH_PREFIX" "${PREFIXES[@]}")
if [ -n "${NVCC:-}" ]; then
  # LibTorch 2.4-2.7's CMake config links torch::nvtoolsext to CUDA::nvToolsExt (NVTX 2) when it
  # finds no NVTX 3; CUDA >= 12.9 (the device has 13.0) ships NVTX 3 headers only, so that target
  # is missing and the configure fails (pytorch/pytorch#152756). Run before find_package(Torch)
  # (CMAKE_PROJECT_INCLUDE), this gives it the header-only CUDA::nvtx3 under the old name; a no-op
  # for 2.8+, whose config uses CUDA::nvtx3 itself. Checked here with CMake 3.25 and CUDA 13.0.
  cat >"$WORK/nvtx-shim.cmake" <<'CMAKE'
find_package(CUDAToolkit QUIET)
if(TARGET CUDA::nvtx3 AND NOT TARGET CUDA::nvToolsExt)
  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  set_property(TARGET CUDA::nvToolsExt PROPERTY INTERFACE_LINK_LIBRARIES CUDA::nvtx3)
  message(STATUS "gpu-run: CUDA::nvToolsExt = CUDA::nvtx3 (NVTX 3 headers only)")
endif()
CMAKE
  TORCH_ARGS+=(-DCMAKE_PROJECT_INCLUDE="$WORK/nvtx-shim.cmake")
fi

# 3. Build (no tests: GoogleTest and RapidCheck are not needed there), all cores.
CXX_STD=17
if [ -n "$TORCH_PREFIX" ] && grep -qs '__cplusplus < 202002L' "$TORCH_DIR/include/ATen/ATen.h" "$TORCH_DIR/include/c10/util/C++17.h"; then
  CXX_STD=20
fi
GEN=(-G "Unix Makefiles")
command -v ninja >/dev/null && GEN=(-G Ninja)
PREFIX_PATH=$(IFS=';'; echo "${PREFIXES[*]:-}")
t=$SECONDS
# A build that would leave no time for phase A is pointless: it is stopped there (TINY: no limit).
build_limit=$(( DEADLINE - PACK_MARGIN - MIN_A - $(elapsed) ))
[ "${TINY:-0}" = 1 ] && build_limit=86400
[ "$build_limit" -gt 0 ] || die "DEADLINE $DEADLINE s leaves no time to build (PACK_MARGIN + MIN_A = $((PACK_MARGIN + MIN_A)) s)"
log "build: cmake + compile in $BUILD_DIR with $NPROC jobs (C++$CXX_STD, $CXX_BIN), at most $build_limit s"
{
  timeout "$build_limit" cmake -S "$ROOT" -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DCMAKE_CXX_COMPILER="$CXX_BIN" -DCMAKE_CXX_STANDARD="$CXX_STD" \
    ${PREFIX_PATH:+-DCMAKE_PREFIX_PATH="$PREFIX_PATH"} "${CMAKE_DEP_ARGS[@]}" "${TORCH_ARGS[@]}" &&
  timeout "$(( build_limit - (SECONDS - t) > 1 ? build_limit - (SECONDS - t) : 1 ))" \
    cmake --build "$BUILD_DIR" --target grassaudit -j "$NPROC"
} >"$BUILD_LOG" 2>&1 || {
  tail -25 "$BUILD_LOG" >&2
  log "error: the build failed or ran out of time after $((SECONDS - t)) s (full output: build.log)"
  exit 1
}
BIN="$ROOT/$BUILD_DIR/grassaudit"
log "build: done in $((SECONDS - t)) s"
# Where each dependency came from, for the record, and none unresolved.
{
  echo "--- resolved packages (CMakeCache.txt)"
  grep -E '^(Torch_DIR|fmt_DIR|nlohmann_json_DIR|Boost_DIR|boost_program_options_DIR|ZLIB_INCLUDE_DIR|ZLIB_LIBRARY_RELEASE|PKG_CONFIG_EXECUTABLE|CMAKE_CUDA_COMPILER|CMAKE_CXX_STANDARD):' \
    "$BUILD_DIR/CMakeCache.txt" || true
  grep -E '^UTF8PROC_(INCLUDE_DIRS|LINK_LIBRARIES):' "$BUILD_DIR/CMakeCache.txt" || true
  echo "--- ldd $BIN"
  ldd "$BIN"
} >>"$BUILD_LOG" 2>&1
if ldd "$BIN" | grep -q 'not found'; then
  log "error: $(ldd "$BIN" | grep 'not found' | tr -s ' \t\n' ' ')"
  exit 1
fi
if [ "$DEVICE" = cuda ] && ! ldd "$BIN" | grep -q 'libtorch_cuda'; then
  log "warning: $BIN does not load libtorch_cuda.so: --device cuda will report CUDA as unavailable"
fi
[ "${TINY:-0}" = 1 ] && START=$SECONDS   # TINY: the deadline counts from here (see the header)

# 4./5. Runs: one process per mixer, concurrently, each under --time-budget.
export GRASSAUDIT_CACHE=$WORK/cache OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
[ "$DEVICE" = cuda ] && export CUBLAS_WORKSPACE_CONFIG=${CUBLAS_WORKSPACE_CONFIG:-:4096:8}
RUN_DIRS=()   # every run folder started, for the summaries
FAILED=0

# pack NAME FOLDER...: OUT/NAME = the run folders without checkpoints/, and OUT/summaries.json
# rewritten from every run folder so far; called after each phase, so a call cut off later still
# brings back what was done.
pack() {
  local name=$1 t=$SECONDS
  shift
  tar -czf "$OUT/$name" --exclude='*/checkpoints' -C "$WORK/runs" "$@"
  "$PYTHON" - "$OUT/summaries.json" "${RUN_DIRS[@]}" <<'PY' || log "warning: summaries.json not written"
import json, os, sys
out, dirs = sys.argv[1], sys.argv[2:]
runs = {}
for d in dirs:
    name = os.path.basename(d)
    p = os.path.join(d, "summary.json")
    if os.path.exists(p):
        with open(p) as f:
            runs[name] = json.load(f)
    else:
        err = os.path.join(d, "train.err")
        last = open(err).read().strip().splitlines()[-1:] if os.path.exists(err) else []
        runs[name] = {"missing": "no summary.json", "last_stderr_line": last[0] if last else ""}
with open(out, "w") as f:
    json.dump(runs, f, indent=2)
    f.write("\n")
PY
  log "packed $name ($(du -h "$OUT/$name" | cut -f1)) and summaries.json in $((SECONDS - t)) s"
}

# run_phase PRESET BUDGET TAG: starts the mixers (folders <preset>-<tokenizer>-<mixer><TAG>),
# follows them, stops stragglers, waits, then packs them into OUT/runs-<preset><TAG>.tar.gz.
run_phase() {
  local preset=$1 budget=$2 tag=$3 pids=() dirs=() names=() members=() i
  for mixer in "${MIXER_LIST[@]}"; do
    local dir="$WORK/runs/$preset-$TOKENIZER-$mixer$tag"
    RUN_DIRS+=("$dir")
    members+=("$(basename "$dir")")
    if [ -f "$dir/summary.json" ]; then log "$preset $mixer: done already ($dir/summary.json), skipped"; continue; fi
    local args
    if [ -f "$dir/checkpoints/last.ckpt" ]; then
      args=(train --resume "$dir/checkpoints/last.ckpt" --out "$dir")
    else
      args=(train --mixer "$mixer" --preset "$preset" --tokenizer "$TOKENIZER" --out "$dir")
      [ -n "${EPOCHS:-}" ] && args+=(--epochs "$EPOCHS")
      # Early stopping: the paper's comparison is at each run's best epoch (reports/README.md).
      [ "${PATIENCE:-3}" != 0 ] && args+=(--patience "${PATIENCE:-3}")
    fi
    [ -n "${MAX_TOKENS:-}" ] && args+=(--max-tokens "$MAX_TOKENS")
    [ -n "${PRECISION:-}" ] && args+=(--precision "$PRECISION")
    args+=(--device "$DEVICE" --threads "$THREADS" --data-dir "$DATA_DIR" --time-budget "$budget")
    mkdir -p "$dir"
    echo "grassaudit ${args[*]}" >"$dir/command.txt"
    "$BIN" "${args[@]}" >>"$dir/train.log" 2>>"$dir/train.err" &
    pids+=($!)
    dirs+=("$dir")
    names+=("$mixer")
    log "$preset $mixer: started (pid $!, --threads $THREADS, --time-budget $budget)"
  done
  [ ${#pids[@]} -gt 0 ] || { pack "runs-$preset$tag.tar.gz" "${members[@]}"; return 0; }
  local hard_stop=$(( $(elapsed) + budget + GRACE )) reported=() alive stopped=0
  for i in "${!pids[@]}"; do reported[$i]=""; done
  while :; do
    alive=0
    for i in "${!pids[@]}"; do
      kill -0 "${pids[$i]}" 2>/dev/null && alive=1
      # The trainer's first lines worth a look while the lease runs: its step time and projection.
      for key in "step time" "CUDA math"; do
        if [[ "${reported[$i]}" != *"$key"* ]] && grep -q "^$key" "${dirs[$i]}/train.err" 2>/dev/null; then
          log "$preset ${names[$i]}: $(grep -m1 "^$key" "${dirs[$i]}/train.err")"
          reported[$i]+="|$key"
        fi
      done
    done
    [ $alive = 1 ] || break
    if [ "$(elapsed)" -ge "$hard_stop" ] && [ $stopped = 0 ]; then
      log "$preset: past budget + GRACE; SIGTERM to the runs still going (they save last.ckpt)"
      for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
      stopped=1
      hard_stop=$(( $(elapsed) + 10 ))
    elif [ "$(elapsed)" -ge "$hard_stop" ]; then
      log "$preset: SIGKILL to the runs still going"
      for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
      break
    fi
    sleep 2
  done
  for i in "${!pids[@]}"; do
    local rc=0
    wait "${pids[$i]}" || rc=$?
    local end
    end=$(grep -E '^(time budget of|grassaudit train: (stopped|error))' "${dirs[$i]}/train.err" | tail -1 || true)
    if [ -f "${dirs[$i]}/summary.json" ]; then
      log "$preset ${names[$i]}: exit $rc, summary.json written. $(grep -E 'test (perplexity|figure)|LEAKY test' "${dirs[$i]}/train.log" | tail -1)"
    else
      log "$preset ${names[$i]}: exit $rc, NO summary.json. ${end:-$(tail -1 "${dirs[$i]}/train.err" 2>/dev/null)}"
      FAILED=1
    fi
  done
  pack "runs-$preset$tag.tar.gz" "${members[@]}"
}

left() { echo $(( DEADLINE - $(elapsed) - PACK_MARGIN )); }
budget_a=$(( $(left) - RESERVE_B ))
if [ "$budget_a" -ge "$MIN_A" ]; then
  log "phase A: $PRESET_A x {${MIXER_LIST[*]}}, --time-budget $budget_a s each"
  run_phase "$PRESET_A" "$budget_a" ""
else
  log "phase A skipped: $budget_a s left for it (< MIN_A $MIN_A s)"
fi
budget_b=$(left)
if [ "$budget_b" -ge "$MIN_B" ]; then
  log "phase B: $PRESET_B x {${MIXER_LIST[*]}}, --time-budget $budget_b s each"
  run_phase "$PRESET_B" "$budget_b" "$([ "$PRESET_B" = "$PRESET_A" ] && echo -b || true)"
else
  log "phase B ($PRESET_B) skipped: $budget_b s left (< MIN_B $MIN_B s; RESERVE_B=N keeps N s of phase A for it)"
fi

# 6. Packed after each phase (pack above); what comes back:
log "in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
n=$(find "$OUT" -type f | wc -l)
[ "$n" -le 8 ] || log "error: $n files in $OUT, more than the 8 that come back"
log "done: exit $FAILED"
exit $FAILED
