#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (one after another, one core), building them
# first if needed. Corpora live in build-fuzz/corpus/<target> (kept between runs, seeded from the
# shared data folder when present); crashes go to build-fuzz/findings/<target>/.
#   scripts/fuzz/run.sh SECONDS [TARGET...]
# Exit status: 0 no finding, 1 a target found a crash/leak/UB (see the log it names).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${FUZZ_OUT:-$ROOT/build-fuzz}"
SECS="${1:?usage: scripts/fuzz/run.sh SECONDS [TARGET...]}"
shift
"$ROOT/scripts/fuzz/build.sh" "$OUT" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for t in "$ROOT"/scripts/fuzz/fuzz_*.cpp; do targets+=("$(basename "$t" .cpp)"); done
fi
DATA="${GRASSAUDIT_DATA:-$ROOT/../shared/data}"

seed() {  # seed TARGET: a few real-data examples in an empty corpus
  local c="$OUT/corpus/$1"
  mkdir -p "$c"
  [ -n "$(ls -A "$c")" ] && return 0
  printf 'hello world\n' >"$c/plain"
  case "$1" in
    fuzz_wordpiece|fuzz_word_tokenizer)
      [ -f "$DATA/wikitext-2/wiki.valid.tokens" ] && head -c 2000 "$DATA/wikitext-2/wiki.valid.tokens" >"$c/wiki"
      printf 'Unaffable café 中文 naïve\tTAB\r\nx\ry' >"$c/unicode" ;;
    fuzz_zip_reader)
      cp "$ROOT/audits/export/gpt_block.pt2" "$c/flat"
      cp "$ROOT/audits/export/gpt_block_packaged.pt2" "$c/packaged" ;;
    fuzz_pickle_scan)  # the pickles of the TorchScript control models
      python3 - "$ROOT/audits/controls" "$c" <<'PY'
import glob, os, sys, zipfile
for i, f in enumerate(sorted(glob.glob(sys.argv[1] + "/*.pt"))[:20]):
    z = zipfile.ZipFile(f)
    for n in z.namelist():
        if n.endswith(".pkl"):
            open(os.path.join(sys.argv[2], f"{i}-{os.path.basename(n)}"), "wb").write(z.read(n))
PY
      ;;
    fuzz_weights_unpickler)  # first byte: 0 the whole torch.save file, 1 its pickle alone
      python3 - "$ROOT/audits/export/gpt_block.pt2" "$c" <<'PY'
import io, sys, zipfile
state = zipfile.ZipFile(sys.argv[1]).read("serialized_state_dict.pt")
pkl = next(n for n in zipfile.ZipFile(io.BytesIO(state)).namelist() if n.endswith("data.pkl"))
open(sys.argv[2] + "/state_dict", "wb").write(b"\x00" + state)
open(sys.argv[2] + "/pickle", "wb").write(b"\x01" + zipfile.ZipFile(io.BytesIO(state)).read(pkl))
PY
      ;;
    fuzz_export_graph)  # first byte: 0 the whole archive, 1 the graph's JSON inside the GPT block
      python3 - "$ROOT/audits/export" "$c" <<'PY'
import sys, zipfile
for name in ("gpt_block", "gru", "two_inputs_dict", "rope_gqa_causal", "cumsum", "cond_causal_taken",
                 "while_loop", "scan", "map_rows", "no_grad", "masked_fill_inf", "guarded_topk",
                 "sdpa_no_mask_batch_2_16"):
    try:
        z = zipfile.ZipFile(f"{sys.argv[1]}/{name}.pt2")
    except FileNotFoundError:
        continue
    open(f"{sys.argv[2]}/{name}.json", "wb").write(b"\x01" + z.read("serialized_exported_program.json"))
open(sys.argv[2] + "/archive", "wb").write(b"\x00" + open(f"{sys.argv[1]}/gpt_block.pt2", "rb").read())
PY
      ;;
    fuzz_snli)
      if [ -f "$DATA/snli/snli_1.0_dev.jsonl.gz" ]; then
        (zcat "$DATA/snli/snli_1.0_dev.jsonl.gz" | head -3 >"$c/dev3") || true
        gzip -c "$c/dev3" >"$c/dev3.gz"
      fi
      printf '{"gold_label": "-", "sentence1": "a", "sentence2": "b"}\n' >"$c/nolabel" ;;
    fuzz_vocab)
      printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\n' >"$c/vocab"
      [ -f "$DATA/bert-base-uncased/vocab.txt" ] && head -c 3000 "$DATA/bert-base-uncased/vocab.txt" >"$c/bert" ;;
    fuzz_onnx_model)  # the ONNX fixtures, ONNX's own node tests under 20 KB, one model with external data
      cp "$ROOT"/tests/fixtures/onnx/*.onnx "$c/"
      for m in /usr/lib/python3/dist-packages/onnx/backend/test/data/node/*/model.onnx; do
        [ -f "$m" ] && [ "$(stat -c %s "$m")" -lt 20480 ] && cp "$m" "$c/$(basename "$(dirname "$m")").onnx"
      done
      python3 - "$c/external_data.onnx" <<'PY'
# y = x + W, W float32 [4] in weights.bin (the scratch model folder fuzz_onnx_model makes), written
# field by field: no onnx Python package is needed.
import struct, sys
def varint(n):
    out = b""
    while True:
        out += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
        n >>= 7
        if not n:
            return out
def field(num, payload):  # length-delimited (wire type 2)
    return varint(num << 3 | 2) + varint(len(payload)) + payload
def num(num, value):  # varint (wire type 0)
    return varint(num << 3) + varint(value)
def entry(k, v):
    return field(1, k.encode()) + field(2, v.encode())
def value_info(name, dims):
    shape = b"".join(field(1, field(2, d.encode()) if isinstance(d, str) else num(1, d)) for d in dims)
    return field(1, name.encode()) + field(2, field(1, num(1, 1) + field(2, shape)))
weight = (num(1, 4) + num(2, 1) + field(8, b"W") + field(13, entry("location", "weights.bin")) +
          field(13, entry("offset", "0")) + field(13, entry("length", "16")) + num(14, 1))
node = field(1, b"x") + field(1, b"W") + field(2, b"y") + field(3, b"add") + field(4, b"Add")
graph = (field(1, node) + field(2, b"g") + field(5, weight) + field(11, value_info("x", ["N", 4])) +
         field(12, value_info("y", ["N", 4])))
open(sys.argv[1], "wb").write(num(1, 8) + field(8, num(2, 17)) + field(7, graph))
PY
      ;;
    fuzz_token_cache)
      printf '\x01\x02\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00hi' >"$c/payload" ;;
  esac
}

status=0
for t in "${targets[@]}"; do
  seed "$t"
  mkdir -p "$OUT/findings/$t"
  log="$OUT/findings/$t.log"
  echo "fuzz: $t for ${SECS}s"
  max_len=4096
  case "$t" in fuzz_weights_unpickler|fuzz_export_graph) max_len=131072 ;; fuzz_onnx_model|fuzz_pickle_scan) max_len=32768 ;; esac  # real models
  if UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" "$OUT/$t" "$OUT/corpus/$t" -max_total_time="$SECS" -max_len="$max_len" -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$OUT/findings/$t/" -print_final_stats=1 >"$log" 2>&1; then
    echo "fuzz: $t ok: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') runs," \
         "corpus $(ls "$OUT/corpus/$t" | wc -l) files, $(grep -oE 'cov: [0-9]+' "$log" | tail -1)"
  else
    status=1
    echo "fuzz: $t FOUND A PROBLEM; log: $log, inputs: $OUT/findings/$t/"
    grep -E 'ERROR|SUMMARY|runtime error|deadly|uncaught' "$log" | head -5 || true
  fi
  rm -rf /dev/shm/grassaudit-fuzz-* /tmp/grassaudit-fuzz-*  # the targets' scratch files and folders
done
exit $status
