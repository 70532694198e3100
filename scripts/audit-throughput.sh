#!/usr/bin/env bash
# Audit throughput on a user-sized model: a GPT-style TorchScript decoder
# (d 384, 6 layers, 6 heads, V 8000, 17M parameters; made by reference/make_user_gpt.py with a
# fixed seed, not committed: 68 MB) audited at L 128 by one or more binaries, alternated ROUNDS
# times, each audit's seconds by check and its verdict/horizons/evidence printed; the unit is the
# plain forward time of [32, 128] through the same file (PyTorch, same machine, between rounds).
#
#   scripts/audit-throughput.sh OLD_BIN NEW_BIN      (default: build/grassaudit alone)
#
# Environment: L (128), THREADS (2), ROUNDS (2), PY (/usr/bin/python3), CACHE (~/.cache/grassaudit),
# DROPOUT (0: the model as an inference export has it, train mode provably eval mode; e.g. 0.1:
# nn.Dropout in GPT-2's places, so train mode is probed on its own).
set -euo pipefail
cd "$(dirname "$0")/.."
L=${L:-128}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
PY=${PY:-/usr/bin/python3}
CACHE=${CACHE:-${GRASSAUDIT_CACHE:-$HOME/.cache/grassaudit}}
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(build/grassaudit)
mkdir -p "$CACHE"
DROPOUT=${DROPOUT:-0}
if [ "$DROPOUT" = 0 ]; then
  MODEL="$CACHE/user-gpt-d384-l6-v8000.pt"
  [ -f "$MODEL" ] || "$PY" reference/make_user_gpt.py "$MODEL"
else
  MODEL="$CACHE/user-gpt-d384-l6-v8000-dropout$DROPOUT.pt"
  [ -f "$MODEL" ] || "$PY" reference/make_user_gpt.py "$MODEL" --dropout "$DROPOUT"
fi
echo "model: $MODEL"
for round in $(seq 1 "$ROUNDS"); do
  # The unit under the OpenMP wait policy the binary runs with (cli/main.cpp: PASSIVE unless the
  # user set one): PyTorch's default spin-waits its OpenMP threads against OpenBLAS's own, which
  # here made the 2-thread forward 1.2 s instead of 0.8 s.
  fwd=$(OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} "$PY" reference/make_user_gpt.py --time-forward "$MODEL" --seq-len "$L" --threads "$THREADS")
  echo "round $round: plain forward [32, $L]: $fwd s"
  for bin in "${BINS[@]}"; do
    out=$(mktemp)
    "$bin" audit --model "$MODEL" --input tokens:8000 --seq-len "$L" --threads "$THREADS" --json "$out" >/dev/null || true
    "$PY" - "$out" "$bin" "$fwd" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); fwd = float(sys.argv[3])
ev = {k: (j.get(k) or {}).get("text") for k in ("length_evidence", "batch_evidence")}
fe = (j.get("forwards") or {}).get("forward_equivalents")
print(f"  {sys.argv[2]}: {j['seconds']:.1f} s = {j['seconds'] / fwd:.1f} plain forwards (wall)"
      + (f", {fe:.1f} forward-equivalents run (tokens)" if fe is not None else "")
      + f"; verdict {j['verdict']}, leak_horizon {j['leak_horizon']}, past_horizon {j['past_horizon']}, probes {j['probes']}")
print("    by check:", {k: round(v, 1) for k, v in j["seconds_by_check"].items()},
      "train mode from eval:", (j.get("train_mode_proof") or {}).get("train_from_eval"))
print("    evidence:", json.dumps([v.get("evidence", {}).get("text") for v in j["violations"]]), json.dumps(ev))
PY
    rm -f "$out"
  done
done
