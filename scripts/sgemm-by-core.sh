#!/usr/bin/env bash
# sgemm rate of Debian's OpenBLAS under each kernel family: one process per
# setting, alternated ROUNDS times, each timing cblas_sgemm 1024^3 and the head's
# [4096, 256] x [256, 30522] through ctypes (no numpy needed). "-" is OpenBLAS's own choice
# (OPENBLAS_CORETYPE unset for that process); a family the CPU lacks would fault, so list only
# what `grassaudit bench` says the CPU runs.
#   scripts/sgemm-by-core.sh [CORE ...]       (default: - Haswell SkylakeX Cooperlake)
# Environment: THREADS (2), ROUNDS (2), PY (/usr/bin/python3).
set -euo pipefail
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
PY=${PY:-/usr/bin/python3}
CORES=("$@")
[ ${#CORES[@]} -eq 0 ] && CORES=(- Haswell SkylakeX Cooperlake)
prog=$(cat <<'PY'
import ctypes, glob, sys, time
lib = ctypes.CDLL(sorted(glob.glob("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas*.so*"))[0])
lib.openblas_get_corename.restype = ctypes.c_char_p
lib.openblas_set_num_threads(int(sys.argv[1]))
def rate(M, N, K, reps):
    A = (ctypes.c_float * (M * K))(); B = (ctypes.c_float * (K * N))(); C = (ctypes.c_float * (M * N))()
    args = (101, 111, 111, M, N, K, ctypes.c_float(1), A, K, B, N, ctypes.c_float(0), C, N)
    lib.cblas_sgemm(*args)
    t = time.perf_counter()
    for _ in range(reps): lib.cblas_sgemm(*args)
    return 2 * M * N * K * reps / (time.perf_counter() - t) / 1e9
print(f"{lib.openblas_get_corename().decode():<12} 1024^3 {rate(1024, 1024, 1024, 10):6.0f} GFLOP/s   "
      f"head [4096,256]x[256,30522] {rate(4096, 30522, 256, 2):6.0f} GFLOP/s")
PY
)
for round in $(seq 1 "$ROUNDS"); do
  for core in "${CORES[@]}"; do
    if [ "$core" = - ]; then env -u OPENBLAS_CORETYPE "$PY" -c "$prog" "$THREADS"
    else OPENBLAS_CORETYPE=$core "$PY" -c "$prog" "$THREADS"; fi
  done
done
