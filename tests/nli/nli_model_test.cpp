// The NLI heads: shapes, padding invariance, parameter counts, checkpoints, and the property a
// public reproduction lacked: the Grassmann head's Pluecker features are non-zero on real SNLI
// pairs, and removing them changes the output.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cmath>

#include "core/checkpoint.h"
#include "core/pluecker.h"
#include "nli/nli_checkpoint.h"
#include "nli/nli_data.h"
#include "nli/nli_model.h"
#include "nli/nli_trainer.h"
#include "nli_test_support.h"
#include "text/snli.h"
#include "util/error.h"

namespace grassaudit {
namespace {

NliConfig small_config(const std::string& head) {
  NliConfig c;
  c.head = head;
  c.full_vocab = 200;
  c.vocab_rows = 50;
  return c;  // the paper's head settings: d 256, d_proj 64, window 8, 4 heads, d_ff 512, 2 layers
}

NliBatch random_batch(int64_t B, int64_t T, int64_t vocab) {
  NliBatch b;
  b.ids = at::randint(5, vocab, {B, T}, at::kLong);
  b.segments = at::zeros({B, T}, at::kLong);
  b.segments.narrow(1, T / 2, T - T / 2).fill_(1);
  b.mask = at::ones({B, T}, at::kBool);
  b.mask[0].narrow(0, T - 3, 3).fill_(false);  // a shorter first row
  b.ids.masked_fill_(b.mask.logical_not(), 0);
  b.labels = at::randint(0, 3, {B}, at::kLong);
  return b;
}

// A few real SNLI dev pairs as one batch, plus a model whose vocabulary map covers them.
struct RealPairs {
  std::vector<NliExample> examples;
  NliBatch batch;
  at::Tensor vocab_map;
  int64_t rows = 0;
};

RealPairs real_pairs(const std::string& data, int64_t n) {
  WordPieceTokenizer tok(Vocab::load_bert(nli_vocab_path(data)));
  SnliData dev = read_snli(data + "/snli/snli_1.0_dev.jsonl.gz");
  RealPairs r;
  for (int64_t i = 0; i < n; ++i) {
    const auto& p = dev.pairs[static_cast<size_t>(i)];
    r.examples.push_back(encode_nli_pair(tok, p.sentence1, p.sentence2, p.label));
  }
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i;
  r.batch = make_nli_batch(r.examples, idx.data(), n, 8);
  r.vocab_map = build_vocab_map(tok.vocab(), r.examples, &r.rows);
  return r;
}

NliConfig real_config(const std::string& head, int64_t rows) {
  NliConfig c;
  c.head = head;
  c.vocab_rows = rows;
  return c;
}

TEST(NliModel, BothHeadsGiveThreeLogitsPerPair) {
  for (const char* head : {"grassmann", "transformer"}) {
    torch::manual_seed(1);
    NliModel m(small_config(head), at::Tensor());
    for (int64_t T : {16, 21, 99}) {
      auto b = random_batch(3, T, 200);
      auto logits = m->forward(b.ids, b.segments, b.mask);
      EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 3})) << head << " T=" << T;
      EXPECT_TRUE(at::isfinite(logits).all().item<bool>()) << head;
      auto loss = at::cross_entropy_loss(logits, b.labels);
      loss.backward();
    }
  }
}

TEST(NliModel, PaddingDoesNotChangeThePrediction) {
  for (const char* head : {"grassmann", "transformer"}) {
    torch::manual_seed(2);
    NliModel m(small_config(head), at::Tensor());
    m->eval();
    torch::NoGradGuard ng;
    auto b = random_batch(1, 13, 200);
    b.mask.fill_(true);
    auto base = m->forward(b.ids, b.segments, b.mask);
    // The same pair padded to 32 positions with junk ids in the padding.
    auto ids = at::cat({b.ids, at::randint(5, 200, {1, 19}, at::kLong)}, 1);
    auto seg = at::cat({b.segments, at::ones({1, 19}, at::kLong)}, 1);
    auto mask = at::cat({b.mask, at::zeros({1, 19}, at::kBool)}, 1);
    auto padded = m->forward(ids, seg, mask);
    EXPECT_TRUE(at::allclose(base, padded, 1e-5, 1e-5)) << head << "\n" << base << "\n" << padded;
  }
}

TEST(NliModel, HeadParameterCountsAreComparable) {
  NliConfig g = small_config("grassmann"), t = small_config("transformer");
  int64_t hg = 0, ht = 0;
  const int64_t ng = nli_parameter_count(g, &hg), nt = nli_parameter_count(t, &ht);
  // Grassmann layer: W_red 256*64+64, W_plu 4*C(16,2)*256+256, gate 512*256+256, FFN, 2 LayerNorms.
  const int64_t layer_g = (256 * 64 + 64) + (4 * 120 * 256 + 256) + (512 * 256 + 256) +
                          (256 * 512 + 512) + (512 * 256 + 256) + 4 * 256;
  const int64_t layer_t = (256 * 768 + 768) + (256 * 256 + 256) + (256 * 512 + 512) + (512 * 256 + 256) + 4 * 256;
  const int64_t classifier = 256 * 3 + 3;
  EXPECT_EQ(hg, 2 * layer_g + classifier);
  EXPECT_EQ(ht, 2 * layer_t + classifier);
  EXPECT_EQ(ng - hg, nt - ht);  // the same shared encoder
  EXPECT_LT(std::abs(static_cast<double>(hg - ht)) / static_cast<double>(ht), 0.03);
}

TEST(NliPluecker, FeaturesOfAVectorWithItselfAreZero) {
  // The degenerate construction of a public reproduction: a pooled vector with itself.
  auto v = at::randn({4, 16}, at::kDouble);
  EXPECT_EQ(pluecker_coords(v, v).abs().max().item<double>(), 0.0);
}

TEST(NliPluecker, FeaturesAreNonZeroOnRealSnliPairs) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  RealPairs r = real_pairs(data, 6);
  torch::manual_seed(3);
  NliModel m(real_config("grassmann", r.rows), r.vocab_map);
  m->eval();
  torch::NoGradGuard ng;
  auto x = m->encode(r.batch.ids, r.batch.segments, r.batch.mask);
  auto& layers = m->grassmann_layers();
  ASSERT_EQ(layers.size(), 2u);
  auto h = x;
  for (size_t l = 0; l < layers.size(); ++l) {
    auto p = layers[l]->pluecker_features(h, r.batch.mask);  // [B, T, 4 * 120]
    const int64_t B = p.size(0), T = p.size(1);
    ASSERT_EQ(p.size(2), 4 * 120);
    auto per_head = p.view({B, T, 4, 120}).norm(2, -1);       // [B, T, 4]
    // Real tokens whose window holds another real token have unit-norm features in every head.
    auto real_in_window = r.batch.mask.to(at::kFloat).view({B, T / 8, 8}).sum(-1, true).expand({B, T / 8, 8})
                              .reshape({B, T}).ge(2).logical_and(r.batch.mask);
    const int64_t n = real_in_window.sum().item<int64_t>();
    ASSERT_GT(n, 6 * 8) << "expected several windows with real tokens";
    auto norms = per_head.masked_select(real_in_window.unsqueeze(-1).expand({B, T, 4}));
    EXPECT_GT(norms.min().item<double>(), 0.999) << "layer " << l;
    EXPECT_LT(norms.max().item<double>(), 1.001) << "layer " << l;
    // Padding has none.
    EXPECT_EQ(per_head.masked_select(r.batch.mask.logical_not().unsqueeze(-1).expand({B, T, 4})).abs().sum().item<double>(), 0.0);
    // Not the same feature for every token: they depend on the token and its window.
    EXPECT_GT((p[0][1] - p[0][2]).abs().max().item<double>(), 1e-3);
    h = layers[l]->forward(h, r.batch.mask);
  }
}

TEST(NliPluecker, RemovingThemChangesTheOutput) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  RealPairs r = real_pairs(data, 6);
  torch::manual_seed(4);
  NliModel m(real_config("grassmann", r.rows), r.vocab_map);
  m->eval();
  torch::NoGradGuard ng;
  auto with = m->forward(r.batch.ids, r.batch.segments, r.batch.mask);
  m->set_ablate_pluecker(true);
  auto without = m->forward(r.batch.ids, r.batch.segments, r.batch.mask);
  m->set_ablate_pluecker(false);
  auto again = m->forward(r.batch.ids, r.batch.segments, r.batch.mask);
  EXPECT_TRUE(at::equal(with, again));
  const double diff = (with - without).abs().max().item<double>();
  EXPECT_GT(diff, 1e-3) << "zeroing the Pluecker features left the logits unchanged";
  // And the Pluecker path carries gradient to W_red (the reduction is not a dead end).
  torch::GradMode::set_enabled(true);
  m->train();
  m->zero_grad(/*set_to_none=*/false);
  auto loss = at::cross_entropy_loss(m->forward(r.batch.ids, r.batch.segments, r.batch.mask), r.batch.labels);
  loss.backward();
  for (const auto& kv : m->named_parameters()) {
    if (kv.key().find("reduce") == std::string::npos) continue;
    ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
    EXPECT_GT(kv.value().grad().abs().sum().item<double>(), 0.0) << kv.key();
  }
}

TEST(NliCheckpoint, RoundTripKeepsWeightsAndVocabularyMap) {
  GRASSAUDIT_REQUIRE_SNLI(data);
  RealPairs r = real_pairs(data, 4);
  nli_testing::TempDir t;
  torch::manual_seed(5);
  NliModel m(real_config("grassmann", r.rows), r.vocab_map);
  m->eval();
  save_nli_checkpoint(t.file("x.ckpt"), m, nullptr, nlohmann::json{{"note", "test"}});
  auto loaded = load_nli_checkpoint(t.file("x.ckpt"));
  EXPECT_EQ(loaded.meta["note"], "test");
  EXPECT_EQ(loaded.config.head, "grassmann");
  EXPECT_EQ(weights_sha256(*m), weights_sha256(*loaded.model));
  // The shared archive writer stores the weights' checksum for NLI checkpoints too (verified on load).
  EXPECT_EQ(loaded.meta.value("stored_weights_sha256", ""), weights_sha256(*m));
  loaded.model->eval();
  torch::NoGradGuard ng;
  EXPECT_TRUE(at::equal(m->forward(r.batch.ids, r.batch.segments, r.batch.mask),
                        loaded.model->forward(r.batch.ids, r.batch.segments, r.batch.mask)));
  std::ofstream(t.file("junk.ckpt")) << "not a checkpoint";
  EXPECT_THROW(load_nli_checkpoint(t.file("junk.ckpt")), InputError);
  EXPECT_THROW(load_nli_checkpoint(t.file("missing.ckpt")), InputError);
}

TEST(NliConfigTest, RejectsBadSettings) {
  NliConfig c = small_config("grassmann");
  c.stride = 4;
  EXPECT_THROW(c.validate(), InputError);
  c = small_config("mlp");
  EXPECT_THROW(c.validate(), InputError);
  c = small_config("grassmann");
  c.d_proj = 6;
  EXPECT_THROW(c.validate(), InputError);
  c = small_config("transformer");
  auto back = nli_config_from_json(to_json(c));
  EXPECT_EQ(to_json(back), to_json(c));
  EXPECT_THROW(nli_config_from_json(nlohmann::json{{"d_modle", 3}}), InputError);
}

}  // namespace
}  // namespace grassaudit
