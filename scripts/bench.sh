#!/usr/bin/env bash
# Throughput benchmarks of the token mixers (see `grassaudit bench --help`).
#
#   scripts/bench.sh sweep     tokens/s vs L for every mixer -> reports/bench/sweep-T<threads>.json
#   scripts/bench.sh targets   the performance targets, side by side -> reports/bench/targets/
#   scripts/bench.sh chunks    the fused head's chunk-size sweep (paper-6l-L128 step) -> targets/loss-chunks-T<threads>.json
#   scripts/bench.sh profile   where the paper-6l-L128 step's time goes, op by op -> targets/op-profile-T<threads>.json
#   scripts/bench.sh decode    generation through the incremental path, past vs attention, contexts
#                              128 .. 4096 (paper-6l-L128 size) -> decode/paper-6l-L128-T<threads>.json
#   scripts/bench.sh all       sweep and targets
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
# and compares medians. The whole-model step is timed with both loss paths interleaved
# (--loss-impl fused,materialized: the chunked head against the full [B*L, V] logits); the
# fused one is compared with PyTorch eager, and its peak memory is measured in a process of its
# own (peak RSS is per process). The summary is printed and written to targets/summary.json.
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

  echo "== whole-model training step (paper-6l-L128), fused vs materialized loss, vs PyTorch, $ROUNDS alternating rounds" >&2
  : >"$D/model-py-T$T.jsonl"
  : >"$D/model-cpp-T$T.jsonl"
  for ((i = 0; i < ROUNDS; i++)); do
    "$BIN" bench --model paper-6l-L128 --mixer attention,past --loss-impl fused,materialized --threads "$T" \
      --reps 2 --warmup 1 2>/dev/null | jq -c '.results[]' >>"$D/model-cpp-T$T.jsonl"
    for m in attention past; do
      "$PY" reference/python/bench_train_step.py --mixer "$m" --threads "$T" --steps 2 >>"$D/model-py-T$T.jsonl"
    done
  done

  echo "== peak memory of the fused training step, one mixer per process" >&2
  local mrows=()
  for m in past attention; do
    mrows+=("$("$BIN" bench --model paper-6l-L128 --mixer "$m" --loss-impl fused --threads "$T" --reps 2 --warmup 1 \
      2>/dev/null | jq -c .)")
  done
  printf '%s\n' "${mrows[@]}" | jq -s '{results: .}' >"$D/memory-model-fused-T$T.json"

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
def model_rows(m, impl):
    return [r for r in cpp if r["mixer"] == f"paper-6l-L128:{m}" and r.get("loss_impl", "materialized") == impl]
for m in ("attention", "past"):
    fused, mat = model_rows(m, "fused"), model_rows(m, "materialized")
    c = statistics.median(r["tokens_per_second"] for r in fused)
    cm = statistics.median(r["tokens_per_second"] for r in mat)
    p = statistics.median([r["tokens_per_second"] for r in py if r["mixer"] == m])
    out[f"model_step_cpp_over_pytorch_{m}"] = c / p
    out[f"model_step_fused_over_materialized_{m}"] = c / cm
    out[f"model_step_cpp_tokens_per_second_{m}"] = c
    out[f"model_step_cpp_materialized_tokens_per_second_{m}"] = cm
    out[f"model_step_pytorch_tokens_per_second_{m}"] = p
    out[f"model_{m}_fused_fraction_of_sgemm"] = statistics.median(r["fraction_of_gemm"] for r in fused)
    out[f"model_{m}_materialized_fraction_of_sgemm"] = statistics.median(r["fraction_of_gemm"] for r in mat)
    # The most any loss path can gain over the materialised step on this machine: a step that ran
    # all its FLOPs at the measured sgemm rate (fraction 1) would be 1 / fraction times faster.
    out[f"model_{m}_fused_over_materialized_bound_at_sgemm_rate"] = 1 / out[f"model_{m}_materialized_fraction_of_sgemm"]
out["model_fused_loss_chunk"] = model_rows("past", "fused")[0]["loss_chunk"]
att = model_rows("attention", "fused")
out["model_attention_achieved_gflops"] = statistics.median(r["achieved_gflops"] for r in att)
out["machine_sgemm_gflops"] = statistics.median(r["gemm_gflops"] for r in att)
out["model_attention_fraction_of_sgemm"] = out["model_attention_achieved_gflops"] / out["machine_sgemm_gflops"]
# Peak RSS: the fused step alone in its process; the interleaved run's figures hold every entry's model.
out["model_peak_rss_mb_fused_alone"] = {r["mixer"].split(":")[1]: r["peak_rss_mb"]
                                        for r in load(f"{D}/memory-model-fused-T{T}.json")}
out["model_peak_rss_mb_interleaved"] = {f"{m} {impl}": max(r["peak_rss_mb"] for r in model_rows(m, impl))
                                        for m in ("attention", "past") for impl in ("fused", "materialized")}
for shape in ("B32-L128", "B1-L8192"):
    out[f"layer_peak_rss_mb_{shape}"] = {r["mixer"]: r["peak_rss_mb"] for r in load(f"{D}/memory-{shape}-T{T}.json")}
out["machine"] = small[0]["machine"]
out["blas"] = small[0]["blas"]
json.dump(out, open(f"{D}/summary-T{T}.json", "w"), indent=2)
print(json.dumps(out, indent=2))
EOF
}

# The fused head's tokens per chunk: every size interleaved in one process (past mixer).
chunks() {
  echo "== fused head chunk sweep, paper-6l-L128 past step, $T thread(s)" >&2
  "$BIN" bench --model paper-6l-L128 --mixer past --loss-impl fused --loss-chunk 128,256,512,1024,2048,4096 \
    --threads "$T" --reps 3 --warmup 1 --json "$OUT/targets/loss-chunks-T$T.json" >/dev/null
}

# Self time by op and category (gemm, layer_norm, gelu, dropout, attention_softmax, ...) of one
# fused step per mixer, after the timed reps.
profile() {
  echo "== op profile of the paper-6l-L128 step (fused loss), $T thread(s)" >&2
  "$BIN" bench --model paper-6l-L128 --mixer past,attention --loss-impl fused --threads "$T" --reps 2 --warmup 1 \
    --profile-ops --json "$OUT/targets/op-profile-T$T.json" >/dev/null
}

# Decode: single-token steps (head included) after a prefill of each context, past (Grassmann
# buffer: the last max-offset reduced states) against attention (KV cache), reps interleaved in one
# process; tokens/s and the state's bytes per context.
decode() {
  echo "== decode through the incremental path, paper-6l-L128 size, $T thread(s)" >&2
  "$BIN" bench --decode --model paper-6l-L128 --mixer past,attention --contexts 128,256,512,1024,2048,4096 \
    --decode-steps 32 --reps 3 --warmup 1 --threads "$T" --json "$OUT/decode/paper-6l-L128-T$T.json" >/dev/null
}

case "$MODE" in
  sweep) sweep ;;
  decode) decode ;;
  targets) targets ;;
  chunks) chunks ;;
  profile) profile ;;
  summary) summary ;;
  all) sweep; targets ;;
  *) echo "usage: scripts/bench.sh [sweep|targets|chunks|profile|decode|summary|all]" >&2; exit 2 ;;
esac
