#!/usr/bin/env bash
# train-to-best-epoch.sh DEADLINE MIXER:SEED...: the paper-size comparison trained to its best
# epoch. Each run goes on the paper's 30-epoch schedule with --patience 3, all runs at once,
# THREADS threads each, at the lowest CPU priority (they use what builds and tests leave), every session
# ending by DEADLINE with gated results (--time-budget); a later call resumes each run from its
# last.ckpt until it stops by patience or at epoch 30.
#
#   DEADLINE  a `date -d` time (e.g. "09:15": the next such time) by which every run must have ended
#   RUN       MIXER:SEED, e.g. past:1 attention:1
# Environment: PRESET (paper-6l-L128), PRECISION (bf16 where the CPU has native bf16, else fp32),
# THREADS (1), BUILD_DIR (build), OUT_ROOT (reports/runs), NICE (19). A machine that keeps no
# files between sessions (checkpoints are not committed) finishes one run per session: one run,
# THREADS=2.
# Output: OUT_ROOT/<preset>-<precision>-wordpiece-<mixer>-seed<S>/ with command.txt, train.log
# (appended per session) and what `grassaudit train` writes (checkpoints/ is ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/train-to-best-epoch.sh DEADLINE MIXER:SEED..." >&2
  exit 2
fi
. scripts/lib/deadline.sh
deadline=$(deadline_seconds train-to-best-epoch "$1")
shift
preset="${PRESET:-paper-6l-L128}"
bin="${BUILD_DIR:-build}/grassaudit"
out_root="${OUT_ROOT:-reports/runs}"
[ -x "$bin" ] || { echo "train-to-best-epoch: $bin is not built" >&2; exit 2; }
if [ -z "${PRECISION:-}" ]; then
  PRECISION=fp32
  grep -qw avx512_bf16 /proc/cpuinfo && PRECISION=bf16
  grep -qw amx_bf16 /proc/cpuinfo && PRECISION=bf16
fi

pids=()
for spec in "$@"; do
  IFS=: read -r mixer seed <<<"$spec"
  [ -n "$mixer" ] && [ -n "$seed" ] || { echo "train-to-best-epoch: bad run '$spec' (MIXER:SEED)" >&2; exit 2; }
  out="$out_root/$preset-$PRECISION-wordpiece-$mixer-seed$seed"
  if [ -f "$out/summary.json" ] && grep -Eq '"stopped_by": "(patience|completed)"' "$out/summary.json"; then
    echo "train-to-best-epoch: $out has stopped ($(grep -o '"stopped_by": "[a-z_]*"' "$out/summary.json")), skipped"
    continue
  fi
  budget=$((deadline - $(date +%s)))
  [ "$budget" -gt 600 ] || { echo "train-to-best-epoch: less than 10 minutes left before the deadline" >&2; exit 2; }
  mkdir -p "$out"
  if [ -f "$out/checkpoints/last.ckpt" ]; then
    cmd=("$bin" train --resume "$out/checkpoints/last.ckpt" --threads "${THREADS:-1}" --time-budget "$budget" --precision "$PRECISION")
  else
    cmd=("$bin" train --mixer "$mixer" --preset "$preset" --tokenizer wordpiece --seed "$seed" --epochs 30
         --patience 3 --precision "$PRECISION" --threads "${THREADS:-1}" --time-budget "$budget" --out "$out")
  fi
  echo "${cmd[*]}" >> "$out/command.txt"
  echo "train-to-best-epoch: $out: ${cmd[*]}"
  nice -n "${NICE:-19}" "${cmd[@]}" >> "$out/train.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
