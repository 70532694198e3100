#!/usr/bin/env bash
# Installs every Debian package grassaudit needs. Idempotent: skips apt entirely when all
# packages are already installed, otherwise runs apt-get update once, then install.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev            # LibTorch 1.13 (CPU)
  libgloo-dev             # Gloo, the CPU backend of c10d (data-parallel training)
  libopenblas0-pthread    # without it LibTorch uses reference BLAS (~30x slower GEMM)
  librapidcheck-dev libgtest-dev libgmock-dev
  libfmt-dev libboost-program-options-dev nlohmann-json3-dev
  libutf8proc-dev         # Unicode NFD / case folding for the WordPiece tokenizer
  zlib1g-dev              # gzip readers (SNLI)
  gnuplot-nox
  clang-14 libclang-rt-14-dev   # libFuzzer targets (scripts/fuzz)
  python3 python3-torch python3-numpy   # reference/ and scripts/ only (fixtures, baselines)
)
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
