// The incremental path of the built-in models: step() chunk by chunk from
// init_state() must give the full forward's final hidden states and logits at every position,
// float64 1e-12 / float32 1e-5 relative to max |y|, for any split into chunks: one at a time, a
// prefill then single steps, random chunk sizes, one chunk; both norms, odd lengths, batch > 1,
// offsets beyond the length (positions without a partner), the reference twins too.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/language_model.h"
#include "core/model_config.h"
#include "util/error.h"

using namespace grassaudit;

namespace {

ModelConfig small_config(const std::string& mixer, const std::string& norm, const std::string& offset_mode) {
  ModelConfig c;
  c.mixer = mixer;
  c.vocab_size = 97;
  c.d_model = 32;
  c.rank = 6;
  c.layers = offset_mode == "all" ? 3 : 4;  // per-layer: one offset per layer
  c.max_len = 48;
  c.heads = 4;
  c.d_ff = 64;
  c.dropout = 0.1;  // eval mode: off, but the modules exist
  c.offsets = {1, 2, 5, 11};
  c.offset_mode = offset_mode;
  c.norm = norm;
  return c;
}

// Chunk sizes summing to L.
std::vector<std::vector<int64_t>> partitions(int64_t L, std::mt19937& rng) {
  std::vector<std::vector<int64_t>> out;
  out.push_back(std::vector<int64_t>(static_cast<size_t>(L), 1));  // one at a time
  const int64_t first = std::max<int64_t>(1, L / 2);
  std::vector<int64_t> prefill{first};
  for (int64_t i = first; i < L; ++i) prefill.push_back(1);          // a prefill, then single steps
  out.push_back(prefill);
  for (int k = 0; k < 3; ++k) {                                      // random chunk sizes 1..7
    std::vector<int64_t> p;
    for (int64_t left = L; left > 0;) {
      const int64_t n = std::min<int64_t>(left, std::uniform_int_distribution<int64_t>(1, 7)(rng));
      p.push_back(n);
      left -= n;
    }
    out.push_back(p);
  }
  out.push_back({L});  // one chunk
  return out;
}

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-300);
  return (a - b).abs().max().item<double>() / scale;
}

void check_model(const std::string& mixer, const std::string& norm, const std::string& offset_mode,
                 at::ScalarType dtype, int64_t L, int64_t B) {
  SCOPED_TRACE(mixer + " " + norm + " " + offset_mode + " " + c10::toString(dtype) + " L=" + std::to_string(L));
  at::manual_seed(7);
  LanguageModel model(small_config(mixer, norm, offset_mode));
  model->to(dtype);
  model->eval();
  at::NoGradGuard no_grad;
  auto ids = at::randint(0, 97, {B, L}, at::kLong);
  auto hidden = model->hidden_from_embeddings(model->embed_tokens(ids));  // [B, L, d]
  auto logits = model->head(hidden);
  const double tol = dtype == at::kDouble ? 1e-12 : 1e-5;
  std::mt19937 rng(11);
  for (const auto& parts : partitions(L, rng)) {
    LmState state = model->init_state();
    std::vector<at::Tensor> h_parts, l_parts;
    int64_t at_pos = 0;
    for (int64_t n : parts) {
      auto h = model->step_hidden(ids.narrow(1, at_pos, n), state);
      h_parts.push_back(h);
      l_parts.push_back(model->head(h));
      at_pos += n;
    }
    EXPECT_EQ(state.offset, L);
    EXPECT_LE(rel_diff(at::cat(h_parts, 1), hidden), tol) << parts.size() << " chunks";
    EXPECT_LE(rel_diff(at::cat(l_parts, 1), logits), tol) << parts.size() << " chunks";
  }
}

}  // namespace

TEST(Incremental, PastAndAttentionEqualTheFullForwardForEverySplit) {
  for (const std::string mixer : {"past", "attention", "literal-past", "literal-attention"})
    for (const std::string norm : {"post", "pre"})
      for (auto dtype : {at::kDouble, at::kFloat}) check_model(mixer, norm, "per-layer", dtype, 37, 3);
}

TEST(Incremental, EveryOffsetInEveryLayerAndLengthsBelowTheLargestOffset) {
  for (auto dtype : {at::kDouble, at::kFloat}) {
    check_model("past", "post", "all", dtype, 29, 2);
    check_model("past", "pre", "all", dtype, 9, 2);   // L < 11: the largest offset never pairs
    check_model("past", "post", "all", dtype, 1, 2);  // one position, no partner at all
  }
}

TEST(Incremental, GrassmannStateStaysTheLastMaxOffsetReducedStates) {
  // Memory per layer does not grow with the context: the kept z is [B, min(T, maxD), r].
  at::manual_seed(3);
  LanguageModel model(small_config("past", "post", "all"));
  model->eval();
  at::NoGradGuard no_grad;
  LmState state = model->init_state();
  for (int64_t t = 0; t < 40; ++t) {
    model->step_hidden(at::randint(0, 97, {2, 1}, at::kLong), state);
    for (const auto& layer : state.layers) {
      ASSERT_EQ(layer.tensors.size(), 1u);
      EXPECT_EQ(layer.tensors[0].size(1), std::min<int64_t>(t + 1, 11));
      EXPECT_EQ(layer.tensors[0].size(2), 6);
    }
  }
}

TEST(Incremental, FutureMixerHasNoIncrementalPathAndSaysWhy) {
  LanguageModel model(small_config("future", "post", "per-layer"));
  EXPECT_FALSE(model->has_incremental());
  try {
    model->init_state();
    FAIL() << "init_state should refuse the future mixer";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tokens that do not exist yet"), std::string::npos) << e.what();
  }
}

TEST(Incremental, ContextBeyondMaxLenIsAOneLineError) {
  LanguageModel model(small_config("attention", "post", "per-layer"));
  model->eval();
  at::NoGradGuard no_grad;
  LmState state = model->init_state();
  model->step_hidden(at::zeros({1, 47}, at::kLong), state);
  EXPECT_THROW(model->step_hidden(at::zeros({1, 2}, at::kLong), state), InputError);
}
