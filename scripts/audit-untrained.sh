#!/usr/bin/env bash
# The main job on its embedded default (no data needed): audit the three mixers, untrained, at
# the paper's 6-layer size, and print the verdicts. Exits 0 when the verdicts are the expected
# ones (future leaky, past and attention causal), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=build/grassaudit
L=${L:-32}
status=0
printf '%-10s %-8s %-8s %s\n' mixer verdict horizon seconds
for mixer in future past attention; do
  out=$(mktemp)
  "$BIN" audit --mixer "$mixer" --seq-len "$L" --json "$out" > /dev/null
  rc=$?
  # 0 causal, 1 leaky; anything else (2 input error, 127 no binary, a crash) is a failure.
  case $rc in 0|1) ;; *) rm -f "$out"; echo "audit of $mixer failed (exit $rc)"; exit 2 ;; esac
  read -r verdict horizon secs < <(python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["verdict"], d["leak_horizon"], round(d["seconds"], 1))
PY
)
  rm -f "$out"
  printf '%-10s %-8s %-8s %s\n' "$mixer" "$verdict" "$horizon" "$secs"
  expected=causal; [ "$mixer" = future ] && expected=leaky
  [ "$verdict" = "$expected" ] || { echo "unexpected verdict for $mixer: $verdict"; status=1; }
done
exit $status
