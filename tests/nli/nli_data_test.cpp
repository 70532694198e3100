// SNLI encoding, split protocol, vocabulary map and batching.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

#include "nli/nli_data.h"
#include "nli_test_support.h"
#include "text/snli.h"
#include "util/error.h"

namespace grassaudit {
namespace {

WordPieceTokenizer bert_tokenizer(const std::string& data) {
  return WordPieceTokenizer(Vocab::load_bert(nli_vocab_path(data)));
}

TEST(NliEncode, PairIsClsPremiseSepHypothesisSep) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  auto tok = bert_tokenizer(data);
  const std::string a = "A man is playing a guitar.", b = "Someone makes music.";
  NliExample ex = encode_nli_pair(tok, a, b, kNeutral);
  auto ea = tok.encode(a), eb = tok.encode(b);
  std::vector<int32_t> want{tok.vocab().at("[CLS]")};
  want.insert(want.end(), ea.begin(), ea.end());
  want.push_back(tok.vocab().at("[SEP]"));
  want.insert(want.end(), eb.begin(), eb.end());
  want.push_back(tok.vocab().at("[SEP]"));
  EXPECT_EQ(ex.ids, want);
  EXPECT_EQ(ex.segment_b, static_cast<int32_t>(ea.size() + 2));
  EXPECT_EQ(ex.label, kNeutral);
  EXPECT_FALSE(ex.truncated);
  EXPECT_EQ(tok.vocab().token(ex.ids[0]), "[CLS]");
  EXPECT_EQ(tok.vocab().token(ex.ids[ex.segment_b - 1]), "[SEP]");
  EXPECT_EQ(tok.vocab().token(ex.ids.back()), "[SEP]");
}

TEST(NliEncode, EachSentenceTruncatedTo48Tokens) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  auto tok = bert_tokenizer(data);
  std::string longer;
  for (int i = 0; i < 60; ++i) longer += "dog ";
  NliExample ex = encode_nli_pair(tok, longer, longer, kEntailment);
  EXPECT_TRUE(ex.truncated);
  ASSERT_EQ(ex.ids.size(), 2u * 48 + 3);
  EXPECT_EQ(ex.segment_b, 50);
  const int32_t sep = tok.vocab().at("[SEP]"), dog = tok.vocab().at("dog");
  EXPECT_EQ(ex.ids[49], sep);
  EXPECT_EQ(ex.ids[98], sep);
  EXPECT_EQ(std::count(ex.ids.begin(), ex.ids.end(), dog), 96);
  // Only the long sentence is cut.
  NliExample one = encode_nli_pair(tok, longer, "a dog", kEntailment);
  EXPECT_EQ(one.ids.size(), 1u + 48 + 1 + 2 + 1);
  NliExample small = encode_nli_pair(tok, "one two three", "four five", kContradiction, 2);
  EXPECT_EQ(small.ids.size(), 1u + 2 + 1 + 2 + 1);
  EXPECT_TRUE(small.truncated);
}

TEST(NliSplit, OfflineDevSplitIsFixedDisjointAndComplete) {
  auto [tr, va] = offline_dev_split(9842, 0.1);
  EXPECT_EQ(va.size(), 984u);
  EXPECT_EQ(tr.size() + va.size(), 9842u);
  std::set<int64_t> all(tr.begin(), tr.end());
  for (int64_t v : va) EXPECT_TRUE(all.insert(v).second) << v;
  EXPECT_EQ(all.size(), 9842u);
  auto again = offline_dev_split(9842, 0.1);
  EXPECT_EQ(again.first, tr);
  EXPECT_EQ(again.second, va);
  EXPECT_TRUE(std::is_sorted(va.begin(), va.end()));
}

TEST(NliSplit, LoadsRealSnliWithOfflineProtocol) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  auto tok = bert_tokenizer(data);
  NliDataOptions o;
  o.data_dir = data;
  o.max_examples = 50;
  NliData d = load_nli_data(tok, o);
  EXPECT_TRUE(d.offline);
  EXPECT_EQ(d.train.examples.size(), 50u);
  EXPECT_EQ(d.val.examples.size(), 50u);
  EXPECT_EQ(d.test.examples.size(), 50u);
  EXPECT_EQ(d.test.skipped_no_label, 176);
  EXPECT_NE(d.protocol.find("held"), std::string::npos);
  EXPECT_NE(d.protocol.find("offline"), std::string::npos);
  for (const auto& ex : d.train.examples) {
    EXPECT_GE(ex.label, 0);
    EXPECT_LE(ex.label, 2);
    EXPECT_LE(ex.ids.size(), 99u);
  }
}

TEST(NliSplit, StandardProtocolWithTrainFile) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  auto tok = bert_tokenizer(data);
  NliDataOptions o;
  o.data_dir = data;
  o.train_file = data + "/snli/snli_1.0_train_first1024.jsonl.gz";
  o.max_examples = 20;
  NliData d = load_nli_data(tok, o);
  EXPECT_FALSE(d.offline);
  EXPECT_NE(d.protocol.find("standard"), std::string::npos);
  EXPECT_EQ(d.val.source, "SNLI 1.0 dev");
  o.train_file = data + "/snli/missing.jsonl.gz";
  EXPECT_THROW(load_nli_data(tok, o), InputError);
}

TEST(NliVocab, MapKeepsSeenIdsAndSendsTheRestToUnk) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  auto tok = bert_tokenizer(data);
  std::vector<NliExample> train{encode_nli_pair(tok, "a dog runs", "a cat sleeps", 0)};
  int64_t rows = 0;
  at::Tensor map = build_vocab_map(tok.vocab(), train, &rows);
  ASSERT_EQ(map.size(0), tok.vocab().size());
  std::set<int32_t> distinct(train[0].ids.begin(), train[0].ids.end());
  EXPECT_EQ(rows, 4 + static_cast<int64_t>(distinct.size()) - 2);  // [CLS] [SEP] already have rows
  auto m = [&](const char* t) { return map[tok.vocab().at(t)].item<int64_t>(); };
  EXPECT_EQ(m("[PAD]"), 0);
  EXPECT_EQ(m("[UNK]"), 1);
  EXPECT_EQ(m("[CLS]"), 2);
  EXPECT_EQ(m("[SEP]"), 3);
  EXPECT_EQ(m("horse"), 1);
  EXPECT_GE(m("dog"), 4);
  EXPECT_NE(m("dog"), m("cat"));
  EXPECT_EQ(map.max().item<int64_t>(), rows - 1);
}

TEST(NliBatch, PaddedToWindowMultipleWithMaskAndSegments) {
  std::vector<NliExample> ex(2);
  ex[0].ids = {101, 5, 6, 102, 7, 102};
  ex[0].segment_b = 4;
  ex[0].label = 2;
  ex[1].ids = {101, 5, 102, 8, 9, 10, 11, 12, 13, 102};
  ex[1].segment_b = 3;
  ex[1].label = 0;
  std::vector<int64_t> idx{0, 1};
  NliBatch b = make_nli_batch(ex, idx.data(), 2, 8);
  ASSERT_EQ(b.ids.sizes(), (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(b.mask.sum().item<int64_t>(), 16);
  EXPECT_EQ(b.ids[0][6].item<int64_t>(), 0);
  EXPECT_EQ(b.segments[0][3].item<int64_t>(), 0);
  EXPECT_EQ(b.segments[0][4].item<int64_t>(), 1);
  EXPECT_EQ(b.segments[0][6].item<int64_t>(), 0);  // padding
  EXPECT_EQ(b.labels[0].item<int64_t>(), 2);
  EXPECT_EQ(b.labels[1].item<int64_t>(), 0);
}

TEST(NliBatch, EpochBatchesCoverEveryExampleOnceDeterministically) {
  std::vector<NliExample> ex(203);
  for (size_t i = 0; i < ex.size(); ++i) ex[i].ids.assign(3 + (i * 7919) % 40, 5);
  auto a = epoch_batches(ex, 16, 7, 2, 4);
  EXPECT_EQ(a.size(), (203u + 15) / 16);
  std::vector<int> seen(ex.size(), 0);
  for (const auto& b : a) {
    EXPECT_LE(b.size(), 16u);
    for (int64_t i : b) ++seen[static_cast<size_t>(i)];
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_EQ(epoch_batches(ex, 16, 7, 2, 4), a);
  EXPECT_NE(epoch_batches(ex, 16, 7, 3, 4), a);
  EXPECT_NE(epoch_batches(ex, 16, 8, 2, 4), a);
}

}  // namespace
}  // namespace grassaudit
