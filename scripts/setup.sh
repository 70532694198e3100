#!/usr/bin/env bash
# Installs every Debian package grassaudit needs. Idempotent: skips apt entirely when all
# packages are already installed, otherwise runs apt-get update once, then install.
#
# Debian 12 (bookworm: LibTorch 1.13) and Debian 13 (trixie: LibTorch 2.6) are both supported and
# tested (.ci/run, scripts/test-debian13.sh). The lists differ only where a package name does:
#   clang-14 libclang-rt-14-dev (bookworm) -> clang libclang-rt-dev (trixie has no clang-14; these
#   are its default clang, 19, and compiler-rt, for scripts/fuzz).
# Another release gets the trixie names (the generic ones) and says so.
#
#   setup.sh                    install what is missing
#   setup.sh --print-packages   print the package list for this machine's release, one per line,
#                               and exit (scripts/debian13-root.sh stamps its root with it)
# RELEASE=12|13 overrides the release read from /etc/os-release (used with --print-packages).
set -euo pipefail
RELEASE=${RELEASE:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_ID:-}")}
COMMON=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev            # LibTorch (CPU): 1.13 on Debian 12, 2.6 on Debian 13
  libgloo-dev             # Gloo, the CPU backend of c10d (data-parallel training)
  libopenblas0-pthread    # without it LibTorch uses reference BLAS (~30x slower GEMM)
  librapidcheck-dev libgtest-dev libgmock-dev
  libfmt-dev libboost-program-options-dev nlohmann-json3-dev
  libutf8proc-dev         # Unicode NFD / case folding for the WordPiece tokenizer
  zlib1g-dev              # gzip readers (SNLI)
  gnuplot-nox
  libonnx-dev             # the ONNX schema (onnx.proto compiled) for reading .onnx files
  libonnx-testdata        # ONNX's own backend tests: the ONNX reader's conformance suite
)
case "$RELEASE" in
  12) CLANG=(clang-14 libclang-rt-14-dev) ;;   # libFuzzer targets (scripts/fuzz)
  13) CLANG=(clang libclang-rt-dev
             python3-onnx python3-onnxruntime) ;;  # reference/ only: ONNX fixtures and their reference outputs
  *)  CLANG=(clang libclang-rt-dev)
      [ "${1:-}" = --print-packages ] || \
        echo "setup: Debian release '${RELEASE:-unknown}' is not one of the tested 12, 13; using Debian 13's package names" >&2 ;;
esac
PKGS=("${COMMON[@]}" "${CLANG[@]}"
  python3 python3-torch python3-numpy   # reference/ and scripts/ only (fixtures, baselines)
  # the Python package (src/python) and its pytest suite (tests/python): torch's cpp_extension
  # includes pybind11 from the system on Debian; pip builds it into a venv (python3-venv)
  pybind11-dev python3-pip python3-setuptools python3-wheel python3-venv python3-pytest
)
case "${1:-}" in
  "") ;;
  --print-packages) printf '%s\n' "${PKGS[@]}"; exit 0 ;;
  *) echo "setup: unknown argument '$1' (expected nothing or --print-packages)" >&2; exit 2 ;;
esac
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
