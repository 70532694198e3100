// LR schedule shape, data order, batches (next-token targets), configs and presets.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "text/lm_blocks.h"
#include "text/wikitext2.h"
#include "train/lm_data.h"
#include "train/presets.h"
#include "train/schedule.h"
#include "train/train_config.h"
#include "train_test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

TEST(LrSchedule, WarmupThenCosineToFloor) {
  const int64_t total = 1000, warmup = 100;
  const double base = 1e-3, ratio = 0.1;
  // Linear warmup: strictly increasing, reaching base at the last warmup step.
  for (int64_t s = 1; s < warmup; ++s) EXPECT_GT(lr_at(s, total, warmup, base, ratio), lr_at(s - 1, total, warmup, base, ratio));
  EXPECT_DOUBLE_EQ(lr_at(0, total, warmup, base, ratio), base / warmup);
  EXPECT_DOUBLE_EQ(lr_at(warmup - 1, total, warmup, base, ratio), base);
  EXPECT_DOUBLE_EQ(lr_at(warmup, total, warmup, base, ratio), base);
  // Cosine: non-increasing, halfway at the midpoint, the floor at the last step.
  for (int64_t s = warmup + 1; s < total; ++s)
    EXPECT_LE(lr_at(s, total, warmup, base, ratio), lr_at(s - 1, total, warmup, base, ratio));
  const int64_t mid = warmup + (total - 1 - warmup) / 2;
  EXPECT_NEAR(lr_at(mid, total, warmup, base, ratio), base * ratio + (base - base * ratio) * 0.5, base * 0.01);
  EXPECT_DOUBLE_EQ(lr_at(total - 1, total, warmup, base, ratio), base * ratio);
  EXPECT_DOUBLE_EQ(lr_at(total + 50, total, warmup, base, ratio), base * ratio);
  // No warmup: starts at base.
  EXPECT_DOUBLE_EQ(lr_at(0, total, 0, base, ratio), base);
}

TEST(DataOrder, PermutationDeterministicPerEpoch) {
  auto a = epoch_order(1000, 7, 0);
  auto b = epoch_order(1000, 7, 0);
  auto c = epoch_order(1000, 7, 1);
  auto d = epoch_order(1000, 8, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_TRUE(epoch_order(0, 1, 0).empty());
  EXPECT_EQ(epoch_order(1, 1, 0), std::vector<int64_t>{0});
}

// Targets are the inputs shifted by one token, across block boundaries too, after shuffling.
void check_next_token(const std::vector<int32_t>& ids, int64_t L) {
  LmBlocks blocks = make_lm_blocks(ids, L);
  ASSERT_GT(blocks.num_blocks, 2);
  std::vector<int64_t> idx = epoch_order(blocks.num_blocks, 3, 0);
  const int64_t n = std::min<int64_t>(64, blocks.num_blocks);
  auto [x, y] = make_batch(blocks, idx.data(), n);
  ASSERT_EQ(x.sizes(), (std::vector<int64_t>{n, L}));
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{n, L}));
  auto xa = x.accessor<int64_t, 2>();
  auto ya = y.accessor<int64_t, 2>();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t b = idx[static_cast<size_t>(r)];
    for (int64_t j = 0; j < L; ++j) {
      ASSERT_EQ(xa[r][j], ids[static_cast<size_t>(b * L + j)]);
      ASSERT_EQ(ya[r][j], ids[static_cast<size_t>(b * L + j + 1)]);
      if (j + 1 < L) ASSERT_EQ(ya[r][j], xa[r][j + 1]);
    }
  }
}

TEST(Batches, TargetsAreInputsShiftedByOneSynthetic) {
  std::vector<int32_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % 997);
  check_next_token(ids, 16);
  auto [x, y] = make_batch_range(make_lm_blocks(ids, 10), 2, 3);
  EXPECT_EQ(x[0][0].item<int64_t>(), ids[20]);
  EXPECT_EQ(y[2][9].item<int64_t>(), ids[50]);
}

TEST(Batches, TargetsAreInputsShiftedByOneWikiText) {
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  TokenizedCorpus c = load_wikitext2(data, "wordpiece", false, testing::shared_cache_dir());
  EXPECT_EQ(c.vocab_size(), 30522);
  EXPECT_EQ(c.train.size(), 2265484u);
  check_next_token(c.train, 128);
  check_next_token(c.valid, 64);
}

TEST(Batches, LimitTokens) {
  std::vector<int32_t> ids(100, 1);
  EXPECT_EQ(limit_tokens(ids, 0).size(), 100u);
  EXPECT_EQ(limit_tokens(ids, 32).size(), 33u);
  EXPECT_EQ(make_lm_blocks(limit_tokens(ids, 32), 16).num_blocks, 2);
  EXPECT_EQ(limit_tokens(ids, 500).size(), 100u);
}

TEST(Presets, AllValidAndDocumented) {
  for (const auto& name : preset_names()) {
    Preset p = get_preset(name);
    for (const char* mixer : {"future", "past", "attention"}) {
      p.model.mixer = mixer;
      EXPECT_NO_THROW(p.model.validate()) << name << " " << mixer;
      EXPECT_NO_THROW(p.train.validate(p.model)) << name;
    }
  }
  Preset paper = get_preset("paper-6l-L128");
  EXPECT_EQ(paper.model.d_model, 256);
  EXPECT_EQ(paper.model.rank, 32);
  EXPECT_EQ(paper.model.layers, 6);
  EXPECT_EQ(paper.model.max_len, 128);
  EXPECT_EQ(paper.model.d_ff, 1024);
  EXPECT_EQ(paper.model.offsets, (std::vector<int64_t>{1, 2, 4, 8, 12, 16}));
  EXPECT_EQ(paper.train.batch, 32);
  EXPECT_EQ(paper.train.epochs, 30);
  EXPECT_EQ(get_preset("paper-6l-L128-alt").model.offsets, (std::vector<int64_t>{1, 2, 4, 8, 8, 8}));
  Preset big = get_preset("paper-12l-L256");
  EXPECT_EQ(big.model.layers, 12);
  EXPECT_EQ(big.model.max_len, 256);
  EXPECT_EQ(big.train.batch, 16);
  EXPECT_THROW(get_preset("nope"), InputError);
}

TEST(TrainConfigJson, RoundTripAndUnknownKeys) {
  TrainConfig c;
  c.lr = 1.5e-4;
  c.seed = 99;
  c.max_tokens = 12345;
  TrainConfig back = train_config_from_json(to_json(c));
  EXPECT_EQ(to_json(back), to_json(c));
  EXPECT_THROW(train_config_from_json(nlohmann::json{{"learning_rate", 1}}), InputError);
  EXPECT_THROW(train_config_from_json(nlohmann::json{{"batch", "32"}}), InputError);
  EXPECT_THROW(train_config_from_json(nlohmann::json{{"batch", 3.5}}), InputError);
  TrainConfig bad;
  bad.batch = 0;
  EXPECT_THROW(bad.validate(ModelConfig{}), InputError);
  bad = TrainConfig{};
  bad.seq_len = 1024;  // > max_len
  EXPECT_THROW(bad.validate(ModelConfig{}), InputError);
}

}  // namespace
}  // namespace grassaudit
