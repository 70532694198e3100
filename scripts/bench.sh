#!/usr/bin/env bash
# Throughput benchmarks of the token mixers (see `grassaudit bench --help`).
#
#   scripts/bench.sh sweep     tokens/s vs L for every mixer -> reports/bench/sweep-T<threads>.json
#   scripts/bench.sh targets   the performance targets, side by side -> reports/bench/targets/
#   scripts/bench.sh all       both
#
# Environment: THREADS (default 1), BIN (default build/grassaudit), PY (default /usr/bin/python3,
# which has torch 1.13), OUT (default reports/bench), ROUNDS (process-level alternations of the
# C++ and Python runs, default 3).
#
# Sweep: L = 128 ... 8192 at a FIXED 8192 tokens per step (batch = 8192 / L: 64, 32, ..., 1), so
# per-token cost is comparable across L. All five mixers (past, future, attention, literal-past,
# literal-future) and all seven lengths are timed in ONE process with their reps interleaved,
# so every ratio in the file is measured side by side. All offsets in every layer ("all" mode,
# 1,2,4,8,12,16), d 256, r 32, 4 heads, dropout 0. About 3-6 minutes on 2 cores.
# peak_rss_mb in the sweep is the process high-water mark during that entry's reps (reset per
# rep); it includes heap kept by earlier entries. The targets run measures memory one mixer per
# process (targets/memory-*.json).
#
# Targets: ratios between C++ mixers come from one interleaved run; C++ against Python
# (nn.MultiheadAttention, the PyTorch training step) alternates the two processes ROUNDS times
# and compares medians. The summary is printed and written to targets/summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-all}
THREADS=${THREADS:-1}
BIN=${BIN:-build/grassaudit}
PY=${PY:-/usr/bin/python3}
OUT=${OUT:-reports/bench}
ROUNDS=${ROUNDS:-3}
T=$THREADS

[[ -x "$BIN" ]] || { echo "bench.sh: $BIN not found; build it first (ninja -C build grassaudit)" >&2; exit 2; }
mkdir -p "$OUT/targets"

sweep() {
  echo "== sweep: 8192 tokens per step, L 128..8192, all mixers interleaved, $T thread(s)" >&2
  "$BIN" bench --mixer past,future,attention,literal-past,literal-future --tokens 8192 \
    --seq-len 128,256,512,1024,2048,4096,8192 --offset-mode all --threads "$T" --reps 3 --warmup 1 \
    --json "$OUT/sweep-T$T.json" >/dev/null
}

targets() {
  local D="$OUT/targets"
  echo "== layer at paper sizes: past vs literal-past vs attention (B 32, L 128, all mode)" >&2
  "$BIN" bench --mixer past,literal-past,attention --batch 32 --seq-len 128 --offset-mode all \
    --threads "$T" --reps 10 --warmup 2 --json "$D/layer-B32-L128-T$T.json" >/dev/null
  echo "== layer at long L: past vs attention, linear in L (8192 tokens per step)" >&2
  "$BIN" bench --mixer past,attention --tokens 8192 --seq-len 128,4096,8192 --offset-mode all \
    --threads "$T" --reps 5 --warmup 1 --json "$D/layer-long-T$T.json" >/dev/null

  echo "== attention vs nn.MultiheadAttention, $ROUNDS alternating rounds" >&2
  : >"$D/mha-py-T$T.jsonl"
  : >"$D/mha-cpp-T$T.jsonl"
  for ((i = 0; i < ROUNDS; i++)); do
    for shape in "32 128" "2 4096"; do
      set -- $shape
      "$PY" reference/python/bench_mha.py --batch "$1" --seq-len "$2" --threads "$T" --reps 5 >>"$D/mha-py-T$T.jsonl"
      "$BIN" bench --mixer attention --batch "$1" --seq-len "$2" --threads "$T" --reps 5 2>/dev/null |
        jq -c . >>"$D/mha-cpp-T$T.jsonl"
    done
  done

  echo "== whole-model training step (paper-6l-L128) vs PyTorch, $ROUNDS alternating rounds" >&2
  : >"$D/model-py-T$T.jsonl"
  : >"$D/model-cpp-T$T.jsonl"
  for ((i = 0; i < ROUNDS; i++)); do
    "$BIN" bench --model paper-6l-L128 --mixer attention,past --threads "$T" --reps 2 --warmup 1 2>/dev/null |
      jq -c '.results[]' >>"$D/model-cpp-T$T.jsonl"
    for m in attention past; do
      "$PY" reference/python/bench_train_step.py --mixer "$m" --threads "$T" --steps 2 >>"$D/model-py-T$T.jsonl"
    done
  done

  echo "== peak memory, one mixer per process: layer at B 32 L 128 and B 1 L 8192" >&2
  for shape in "32 128" "1 8192"; do
    set -- $shape
    local rows=()
    for m in past attention literal-past; do
      rows+=("$("$BIN" bench --mixer "$m" --batch "$1" --seq-len "$2" --threads "$T" --reps 2 --warmup 1 2>/dev/null | jq -c .)")
    done
    printf '%s\n' "${rows[@]}" | jq -s '{results: .}' >"$D/memory-B$1-L$2-T$T.json"
  done

  summary
}

summary() {
  local D="$OUT/targets"
  python3 - "$D" "$T" <<'EOF'
import json, statistics, sys
D, T = sys.argv[1], sys.argv[2]
def load(p):
    j = json.load(open(p))
    return j["results"] if "results" in j else [j]
def lines(p):
    return [json.loads(l) for l in open(p) if l.strip()]
def tps(rows, mixer, L=None):
    v = [r["tokens_per_second"] for r in rows if r["mixer"] == mixer and (L is None or r["seq_len"] == L)]
    return statistics.median(v)
out = {"threads": int(T)}
small = load(f"{D}/layer-B32-L128-T{T}.json")
out["past_over_literal_past_L128"] = tps(small, "past") / tps(small, "literal-past")
out["past_over_attention_L128"] = tps(small, "past") / tps(small, "attention")
long = load(f"{D}/layer-long-T{T}.json")
out["past_over_attention_L4096"] = tps(long, "past", 4096) / tps(long, "attention", 4096)
out["past_per_token_cost_L8192_over_L128"] = tps(long, "past", 128) / tps(long, "past", 8192)
py, cpp = lines(f"{D}/mha-py-T{T}.jsonl"), lines(f"{D}/mha-cpp-T{T}.jsonl")
for L in (128, 4096):
    out[f"attention_over_nn_mha_L{L}"] = tps(cpp, "attention", L) / statistics.median(
        [r["tokens_per_second"] for r in py if r["seq_len"] == L])
py, cpp = lines(f"{D}/model-py-T{T}.jsonl"), lines(f"{D}/model-cpp-T{T}.jsonl")
for m in ("attention", "past"):
    c = tps(cpp, f"paper-6l-L128:{m}")
    p = statistics.median([r["tokens_per_second"] for r in py if r["mixer"] == m])
    out[f"model_step_cpp_over_pytorch_{m}"] = c / p
    out[f"model_step_cpp_tokens_per_second_{m}"] = c
    out[f"model_step_pytorch_tokens_per_second_{m}"] = p
att = [r for r in cpp if r["mixer"] == "paper-6l-L128:attention"]
out["model_attention_achieved_gflops"] = statistics.median(r["achieved_gflops"] for r in att)
out["machine_sgemm_gflops"] = statistics.median(r["gemm_gflops"] for r in att)
out["model_attention_fraction_of_sgemm"] = out["model_attention_achieved_gflops"] / out["machine_sgemm_gflops"]
out["model_peak_rss_mb"] = {m: max(r["peak_rss_mb"] for r in cpp if r["mixer"] == f"paper-6l-L128:{m}")
                            for m in ("attention", "past")}
for shape in ("B32-L128", "B1-L8192"):
    out[f"layer_peak_rss_mb_{shape}"] = {r["mixer"]: r["peak_rss_mb"] for r in load(f"{D}/memory-{shape}-T{T}.json")}
out["machine"] = small[0]["machine"]
out["blas"] = small[0]["blas"]
json.dump(out, open(f"{D}/summary-T{T}.json", "w"), indent=2)
print(json.dumps(out, indent=2))
EOF
}

case "$MODE" in
  sweep) sweep ;;
  targets) targets ;;
  summary) summary ;;
  all) sweep; targets ;;
  *) echo "usage: scripts/bench.sh [sweep|targets|summary|all]" >&2; exit 2 ;;
esac
