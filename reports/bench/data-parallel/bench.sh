#!/usr/bin/env bash
# bench.sh CONFIG MAX_TOKENS ROUNDS: alternates 1 process x 2 threads (A) and 2 ranks x 1 thread (B).
set -u
B=/work/wt17/build/grassaudit
export GRASSAUDIT_DATA=/work/shared/data
cfg=$1; maxt=$2; rounds=$3; name=$(basename $cfg .json)
for i in $(seq ${FIRST:-1} $rounds); do
  echo "round $i load before: $(cut -d" " -f1-3 /proc/loadavg)"; rm -rf A-$name-$i B-$name-$i
  OMP_NUM_THREADS=2 $B train --config $cfg --max-tokens $maxt --threads 2 --out A-$name-$i > A-$name-$i.log 2>&1
  port=$((29700 + i))
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
      $B train --config $cfg --max-tokens $maxt --threads 1 --out B-$name-$i > B-$name-$i.r$r.log 2>&1 &
  done
  wait
  python3 - "$name" "$i" <<'PY'
import json,sys
n,i=sys.argv[1:]
a=json.load(open(f"A-{n}-{i}/summary.json")); b=json.load(open(f"B-{n}-{i}/summary.json"))
print(f"{n} round {i}: A 1x2thr {a['tokens_per_second']:.0f} tok/s ({a['steps']} steps, {a['train_seconds']:.1f} s); "
      f"B 2x1thr {b['tokens_per_second']:.0f} tok/s ({b['train_seconds']:.1f} s, allreduce {b['allreduce_seconds']:.2f} s = "
      f"{100*b['allreduce_seconds']/b['train_seconds']:.1f}%); B/A {b['tokens_per_second']/a['tokens_per_second']:.3f}", flush=True)
PY
done
