#pragma once
// SNLI as the NLI trainer sees it: WordPiece-encoded pairs, the split protocol and padded
// batches.
//
// Encoding (BERT's pair format): [CLS] premise [SEP] hypothesis [SEP], each sentence cut to its
// first `max_sentence_tokens` WordPiece tokens (48, the paper's setting), so a pair is at most
// 2 * 48 + 3 = 99 ids. Segment 0 covers [CLS] premise [SEP], segment 1 hypothesis [SEP].
//
// Protocols:
//   offline (no --train): the 550k training split is not available offline. The dev split is
//     cut by a fixed permutation (epoch_order(n, kNliSplitSeed, 0), independent of the training
//     seed) into a held-out slice (the last round(holdout * n) pairs of the permutation, 10% by
//     default) used for best-epoch selection, and the rest, used for training. Accuracy is
//     reported on the full test split.
//   standard (--train FILE): train on FILE, select on dev, report on test.
// In both, pairs whose gold label is "-" are skipped and counted (read_snli).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "text/wordpiece.h"

namespace grassaudit {

constexpr int64_t kNliMaxSentenceTokens = 48;
constexpr uint64_t kNliSplitSeed = 20251219;  // the fixed dev split (offline protocol)

struct NliExample {
  std::vector<int32_t> ids;  // [CLS] a [SEP] b [SEP] (WordPiece ids)
  int32_t segment_b = 0;     // index of the first segment-1 position (first hypothesis token)
  int32_t label = 0;         // 0 entailment, 1 neutral, 2 contradiction
  bool truncated = false;    // a sentence was cut to max_sentence_tokens
};

// Encodes one pair. Throws InputError if the tokenizer's vocabulary lacks [CLS] or [SEP].
NliExample encode_nli_pair(const WordPieceTokenizer& tok, const std::string& premise,
                           const std::string& hypothesis, int32_t label,
                           int64_t max_sentence_tokens = kNliMaxSentenceTokens);

struct NliSplit {
  std::string name;    // "train", "val", "test"
  std::string source;  // where it came from, in words
  std::vector<NliExample> examples;
  int64_t skipped_no_label = 0;  // gold label "-" in the file(s) this split was read from
  int64_t truncated = 0;         // pairs with a sentence cut to max_sentence_tokens
};

struct NliData {
  NliSplit train, val, test;
  std::string protocol;  // one sentence, for config.json / summary.json
  bool offline = true;
  // SHA-256 of every SNLI file read, by its path as given or relative to the data folder.
  std::map<std::string, std::string> file_sha256;
};

struct NliDataOptions {
  std::string data_dir;    // --data-dir ("" = default lookup)
  std::string train_file;  // --train ("" = offline protocol)
  double holdout = 0.1;    // offline protocol: fraction of dev held out for selection
  int64_t max_examples = 0;  // > 0: keep the first N pairs of every split (tests, smoke runs)
  int64_t max_sentence_tokens = kNliMaxSentenceTokens;
};

// The path of "bert-base-uncased/vocab.txt" in the data folder (InputError if missing).
std::string nli_vocab_path(const std::string& data_dir);

// Reads and encodes the three splits under the chosen protocol.
NliData load_nli_data(const WordPieceTokenizer& tok, const NliDataOptions& options);

// The offline split of n dev pairs: (training indices, held-out indices), both in dev order.
std::pair<std::vector<int64_t>, std::vector<int64_t>> offline_dev_split(int64_t n, double holdout);

// The embedding-row map: WordPiece id -> row. Rows 0..3 are [PAD], [UNK], [CLS], [SEP]; then
// every id occurring in `train` in increasing id order. Ids never seen in training map to the
// [UNK] row (their embedding would never receive a gradient). Returns [vocab_size] int64 and
// sets *rows to the number of rows.
at::Tensor build_vocab_map(const Vocab& vocab, const std::vector<NliExample>& train, int64_t* rows);

struct NliBatch {
  at::Tensor ids;       // [B, T] int64 WordPiece ids, [PAD] (0) beyond each pair's length
  at::Tensor segments;  // [B, T] int64 0/1
  at::Tensor mask;      // [B, T] bool, true on real tokens
  at::Tensor labels;    // [B] int64
};

// Rows examples[indices[0..n)], padded to the longest, rounded up to a multiple of `multiple`.
NliBatch make_nli_batch(const std::vector<NliExample>& examples, const int64_t* indices, int64_t n,
                        int64_t multiple, int32_t pad_id = 0);

// The training batches of one epoch, a pure function of (seed, epoch) so a resumed run repeats
// them: the permutation epoch_order(n, seed, epoch) is cut into chunks of `bucket` batches, each
// chunk is sorted by length (stable) and cut into batches (less padding: similar lengths share a
// batch), and the batch order is shuffled again. ceil(n / batch) batches; every index once.
std::vector<std::vector<int64_t>> epoch_batches(const std::vector<NliExample>& examples, int64_t batch,
                                                uint64_t seed, int64_t epoch, int64_t bucket = 50);

// Indices 0..n-1 sorted by length (stable): evaluation batches with little padding.
std::vector<int64_t> length_sorted_order(const std::vector<NliExample>& examples);

}  // namespace grassaudit
