#!/usr/bin/env bash
# train-queue.sh DEADLINE RUN...: the committed CPU runs of the comparison, one after another, each
# data-parallel over RANKS processes of one thread (2 ranks x 1 thread measured 1.09x faster than
# one process with 2 threads on the 2-core machines, reports/bench/data-parallel/), each with
# --time-budget = what is left until DEADLINE, so every run ends with its audit gate and
# evaluations (valid, gated figures, or a partial epoch that summary.json records as such).
#
#   DEADLINE  a `date -d` time (e.g. "01:05": the next such time) by which the last run must have ended
#   RUN       MIXER:SEED[:NORM], e.g. past:1 attention:2 past:1:pre  (NORM: post, the default, | pre)
# Environment: PRESET (cpu-small), RANKS (2), MIN_SECONDS (1200: a run is not started with less
# left), PYTHON (/usr/bin/python3), BUILD_DIR (build), OUT_ROOT (reports/runs), EXTRA (more train flags).
# Output: OUT_ROOT/<preset>-wordpiece-<mixer>[-pre]-seed<S>/ with command.txt, train.log (stderr
# of rank 0) and what `grassaudit train` writes (config.json, metrics.jsonl, audit.json,
# summary.json; checkpoints/ is ignored by git). A run whose folder already holds summary.json is
# skipped, so the queue can be restarted.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: scripts/train-queue.sh DEADLINE MIXER:SEED[:NORM]..." >&2
  exit 2
fi
. scripts/lib/deadline.sh
deadline=$(deadline_seconds train-queue "$1")
shift
preset="${PRESET:-cpu-small}"
ranks="${RANKS:-2}"
min_seconds="${MIN_SECONDS:-1200}"
bin="${BUILD_DIR:-build}/grassaudit"
out_root="${OUT_ROOT:-reports/runs}"
# Debian's torch (the launcher), not whatever python3 comes first on PATH.
python="${PYTHON:-/usr/bin/python3}"
[ -x "$bin" ] || { echo "train-queue: $bin is not built" >&2; exit 2; }

status=0
for spec in "$@"; do
  IFS=: read -r mixer seed norm <<<"$spec"
  norm="${norm:-post}"
  if [ -z "$mixer" ] || [ -z "$seed" ] || { [ "$norm" != post ] && [ "$norm" != pre ]; }; then
    echo "train-queue: bad run '$spec' (MIXER:SEED[:NORM], NORM post|pre)" >&2
    exit 2
  fi
  suffix=""
  [ "$norm" = pre ] && suffix="-pre"
  out="$out_root/$preset-wordpiece-$mixer$suffix-seed$seed"
  if [ -f "$out/summary.json" ]; then
    echo "train-queue: $out already has summary.json, skipped"
    continue
  fi
  left=$((deadline - $(date +%s)))
  if [ "$left" -lt "$min_seconds" ]; then
    echo "train-queue: $left s left before the deadline (< $min_seconds), $spec not started"
    continue
  fi
  mkdir -p "$out"
  cmd=("$python" -m torch.distributed.run --redirects 1 --tee 1 --no_python --nproc_per_node "$ranks"
       --master_port "$((29500 + RANDOM % 1000))"
       "$bin" train --mixer "$mixer" --preset "$preset" --tokenizer wordpiece --seed "$seed"
       --norm "$norm" --threads 1 --time-budget "$left" --out "$out" ${EXTRA:-})
  printf '%q ' "${cmd[@]}" >"$out/command.txt"
  echo >>"$out/command.txt"
  echo "train-queue: $(date +%T) $spec -> $out ($left s left)"
  rc=0
  "${cmd[@]}" >"$out/train.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "train-queue: $(date +%T) $spec done"
  else
    echo "train-queue: $(date +%T) $spec failed (exit $rc), see $out/train.log"
    status=1
  fi
done
exit $status
