#include "nli/nli_data.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "text/data_dir.h"
#include "text/snli.h"
#include "train/schedule.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace grassaudit {

NliExample encode_nli_pair(const WordPieceTokenizer& tok, const std::string& premise,
                           const std::string& hypothesis, int32_t label, int64_t max_sentence_tokens) {
  const int32_t cls = tok.vocab().find("[CLS]");
  const int32_t sep = tok.vocab().find("[SEP]");
  if (cls == Vocab::kNoId || sep == Vocab::kNoId)
    throw InputError("the WordPiece vocabulary has no [CLS] or [SEP] token");
  std::vector<int32_t> a, b;
  tok.encode(premise, a, "premise");
  tok.encode(hypothesis, b, "hypothesis");
  NliExample ex;
  ex.label = label;
  const auto cap = static_cast<size_t>(std::max<int64_t>(max_sentence_tokens, 0));
  if (a.size() > cap || b.size() > cap) ex.truncated = true;
  a.resize(std::min(a.size(), cap));
  b.resize(std::min(b.size(), cap));
  ex.ids.reserve(a.size() + b.size() + 3);
  ex.ids.push_back(cls);
  ex.ids.insert(ex.ids.end(), a.begin(), a.end());
  ex.ids.push_back(sep);
  ex.segment_b = static_cast<int32_t>(ex.ids.size());
  ex.ids.insert(ex.ids.end(), b.begin(), b.end());
  ex.ids.push_back(sep);
  return ex;
}

std::string nli_vocab_path(const std::string& data_dir) {
  return require_data_file(data_dir, "bert-base-uncased/vocab.txt");
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> offline_dev_split(int64_t n, double holdout) {
  if (!(holdout > 0.0 && holdout < 1.0)) throw InputError(fmt::format("holdout fraction must be in (0, 1), got {}", holdout));
  std::vector<int64_t> perm = epoch_order(n, kNliSplitSeed, 0);
  int64_t n_val = static_cast<int64_t>(std::llround(holdout * static_cast<double>(n)));
  if (n >= 2) n_val = std::clamp<int64_t>(n_val, 1, n - 1);
  else n_val = 0;
  std::vector<int64_t> train(perm.begin(), perm.end() - n_val);
  std::vector<int64_t> val(perm.end() - n_val, perm.end());
  std::sort(train.begin(), train.end());
  std::sort(val.begin(), val.end());
  return {train, val};
}

namespace {

NliSplit encode_split(const WordPieceTokenizer& tok, const SnliData& data, const std::vector<int64_t>& rows,
                      const std::string& name, const std::string& source, int64_t max_examples,
                      int64_t max_sentence_tokens) {
  NliSplit s;
  s.name = name;
  s.source = source;
  s.skipped_no_label = data.skipped_no_label;
  int64_t n = static_cast<int64_t>(rows.size());
  if (max_examples > 0) n = std::min(n, max_examples);
  s.examples.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const SnliPair& p = data.pairs[static_cast<size_t>(rows[static_cast<size_t>(i)])];
    s.examples.push_back(encode_nli_pair(tok, p.sentence1, p.sentence2, p.label, max_sentence_tokens));
    s.truncated += s.examples.back().truncated;
  }
  if (s.examples.empty()) throw InputError(fmt::format("{} split ({}) has no labelled pairs", name, source));
  return s;
}

std::vector<int64_t> all_rows(const SnliData& d) {
  std::vector<int64_t> r(d.pairs.size());
  std::iota(r.begin(), r.end(), 0);
  return r;
}

}  // namespace

NliData load_nli_data(const WordPieceTokenizer& tok, const NliDataOptions& o) {
  NliData out;
  const std::string dev_path = require_data_file(o.data_dir, "snli/snli_1.0_dev.jsonl.gz");
  const std::string test_path = require_data_file(o.data_dir, "snli/snli_1.0_test.jsonl.gz");
  const SnliData dev = read_snli(dev_path);
  const SnliData test = read_snli(test_path);
  out.file_sha256["snli/snli_1.0_dev.jsonl.gz"] = sha256_hex(read_file(dev_path));
  out.file_sha256["snli/snli_1.0_test.jsonl.gz"] = sha256_hex(read_file(test_path));
  out.test = encode_split(tok, test, all_rows(test), "test", "SNLI 1.0 test", o.max_examples, o.max_sentence_tokens);
  if (o.train_file.empty()) {
    out.offline = true;
    auto [tr, va] = offline_dev_split(static_cast<int64_t>(dev.pairs.size()), o.holdout);
    out.train = encode_split(tok, dev, tr, "train",
                             fmt::format("SNLI 1.0 dev, {:.0f}% not held out", 100.0 * (1.0 - o.holdout)),
                             o.max_examples, o.max_sentence_tokens);
    out.val = encode_split(tok, dev, va, "val", fmt::format("SNLI 1.0 dev, {:.0f}% held out", 100.0 * o.holdout),
                           o.max_examples, o.max_sentence_tokens);
    out.protocol = fmt::format(
        "offline: train on {:.0f}% of SNLI dev ({} labelled pairs), select the best epoch on the other {:.0f}% "
        "({} pairs, held out; fixed split, permutation seed {}, independent of the training seed), report accuracy on SNLI "
        "test ({} pairs); gold label '-' skipped ({} in dev, {} in test)",
        100.0 * (1.0 - o.holdout), out.train.examples.size(), 100.0 * o.holdout, out.val.examples.size(),
        kNliSplitSeed, out.test.examples.size(), dev.skipped_no_label, test.skipped_no_label);
  } else {
    out.offline = false;
    const SnliData train = read_snli(o.train_file);
    out.file_sha256[o.train_file] = sha256_hex(read_file(o.train_file));
    out.train = encode_split(tok, train, all_rows(train), "train", o.train_file, o.max_examples,
                             o.max_sentence_tokens);
    out.val = encode_split(tok, dev, all_rows(dev), "val", "SNLI 1.0 dev", o.max_examples, o.max_sentence_tokens);
    out.protocol = fmt::format(
        "standard: train on {} ({} labelled pairs), select the best epoch on SNLI dev ({}), report accuracy on "
        "SNLI test ({}); gold label '-' skipped ({} in train, {} in dev, {} in test)",
        o.train_file, out.train.examples.size(), out.val.examples.size(), out.test.examples.size(),
        train.skipped_no_label, dev.skipped_no_label, test.skipped_no_label);
  }
  if (o.max_examples > 0) out.protocol += fmt::format("; every split cut to its first {} pairs (--max-examples)", o.max_examples);
  return out;
}

at::Tensor build_vocab_map(const Vocab& vocab, const std::vector<NliExample>& train, int64_t* rows) {
  const int64_t V = vocab.size();
  const int32_t pad = vocab.find("[PAD]"), unk = vocab.find("[UNK]"), cls = vocab.find("[CLS]"),
                sep = vocab.find("[SEP]");
  if (pad == Vocab::kNoId || unk == Vocab::kNoId || cls == Vocab::kNoId || sep == Vocab::kNoId)
    throw InputError("the WordPiece vocabulary lacks one of [PAD] [UNK] [CLS] [SEP]");
  std::vector<char> seen(static_cast<size_t>(V), 0);
  for (const auto& ex : train)
    for (int32_t id : ex.ids) {
      if (id < 0 || id >= V) throw InputError(fmt::format("token id {} outside the vocabulary ({})", id, V));
      seen[static_cast<size_t>(id)] = 1;
    }
  auto map = at::full({V}, 1, at::kLong);  // unseen -> [UNK] row
  auto* m = map.data_ptr<int64_t>();
  m[pad] = 0;
  m[unk] = 1;
  m[cls] = 2;
  m[sep] = 3;
  int64_t next = 4;
  for (int64_t id = 0; id < V; ++id) {
    if (id == pad || id == unk || id == cls || id == sep) continue;
    if (seen[static_cast<size_t>(id)]) m[id] = next++;
  }
  *rows = next;
  return map;
}

NliBatch make_nli_batch(const std::vector<NliExample>& examples, const int64_t* indices, int64_t n,
                        int64_t multiple, int32_t pad_id) {
  int64_t T = 1;
  for (int64_t i = 0; i < n; ++i) T = std::max<int64_t>(T, static_cast<int64_t>(examples[indices[i]].ids.size()));
  if (multiple > 1) T = (T + multiple - 1) / multiple * multiple;
  NliBatch b;
  b.ids = at::full({n, T}, pad_id, at::kLong);
  b.segments = at::zeros({n, T}, at::kLong);
  b.mask = at::zeros({n, T}, at::kBool);
  b.labels = at::empty({n}, at::kLong);
  auto* ids = b.ids.data_ptr<int64_t>();
  auto* seg = b.segments.data_ptr<int64_t>();
  auto* mask = b.mask.data_ptr<bool>();
  auto* lab = b.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const NliExample& ex = examples[static_cast<size_t>(indices[i])];
    const int64_t len = static_cast<int64_t>(ex.ids.size());
    for (int64_t t = 0; t < len; ++t) {
      ids[i * T + t] = ex.ids[static_cast<size_t>(t)];
      seg[i * T + t] = t >= ex.segment_b ? 1 : 0;
      mask[i * T + t] = true;
    }
    lab[i] = ex.label;
  }
  return b;
}

std::vector<std::vector<int64_t>> epoch_batches(const std::vector<NliExample>& examples, int64_t batch,
                                                uint64_t seed, int64_t epoch, int64_t bucket) {
  const int64_t n = static_cast<int64_t>(examples.size());
  const std::vector<int64_t> order = epoch_order(n, seed, epoch);
  const int64_t chunk = batch * std::max<int64_t>(bucket, 1);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t c0 = 0; c0 < n; c0 += chunk) {
    std::vector<int64_t> part(order.begin() + c0, order.begin() + std::min(n, c0 + chunk));
    std::stable_sort(part.begin(), part.end(), [&](int64_t a, int64_t b) {
      return examples[static_cast<size_t>(a)].ids.size() < examples[static_cast<size_t>(b)].ids.size();
    });
    for (size_t b0 = 0; b0 < part.size(); b0 += static_cast<size_t>(batch))
      batches.emplace_back(part.begin() + static_cast<std::ptrdiff_t>(b0),
                           part.begin() + static_cast<std::ptrdiff_t>(std::min(part.size(), b0 + static_cast<size_t>(batch))));
  }
  const std::vector<int64_t> shuffle =
      epoch_order(static_cast<int64_t>(batches.size()), seed ^ 0x6A09E667F3BCC908ull, epoch);
  std::vector<std::vector<int64_t>> out;
  out.reserve(batches.size());
  for (int64_t i : shuffle) out.push_back(std::move(batches[static_cast<size_t>(i)]));
  return out;
}

std::vector<int64_t> length_sorted_order(const std::vector<NliExample>& examples) {
  std::vector<int64_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return examples[static_cast<size_t>(a)].ids.size() < examples[static_cast<size_t>(b)].ids.size();
  });
  return order;
}

}  // namespace grassaudit
