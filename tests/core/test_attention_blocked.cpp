// The fast attention path's long-sequence branch (queries in blocks of 256 that only read keys
// up to their block's end) against plain full-mask attention written out here, float64.
// (Moved from tests/bench: it tests the core mixer, not the bench.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <limits>

#include "core/attention_mixer.h"

using namespace grassaudit;

namespace {
at::TensorOptions f64() { return at::TensorOptions().dtype(at::kDouble); }
double max_abs(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }
}  // namespace

// Long sequences take the blocked causal path (queries in blocks, keys only up to the block's
// end). It must equal plain masked attention, outputs and gradients, float64.
TEST(CustomBackward, BlockedCausalAttentionEqualsFullMaskedAttentionFloat64) {
  const int64_t d = 8, H = 2, L = 1100, dh = d / H;
  at::manual_seed(4);
  AttentionMixerImpl attn(d, H, 0.0);
  attn.to(at::kDouble);
  attn.eval();
  auto params = attn.named_parameters();
  auto h = at::randn({1, L, d}, f64());
  auto w = at::randn({1, L, d}, f64());
  auto hf = h.clone().requires_grad_(true), hr = h.clone().requires_grad_(true);
  auto yf = attn.forward(hf);
  // Reference: full [L, L] scores with a boolean causal mask, as before the fast path.
  auto qkv = at::linear(hr, params["in_proj.weight"], params["in_proj.bias"]).view({1, L, 3, H, dh}).permute({2, 0, 3, 1, 4});
  auto scores = at::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
  auto blocked = at::ones({L, L}, at::kBool).triu(1);
  auto probs = at::softmax(scores.masked_fill(blocked, -std::numeric_limits<double>::infinity()), -1);
  auto ctx = at::matmul(probs, qkv[2]).permute({0, 2, 1, 3}).reshape({1, L, d});
  auto yr = at::layer_norm(hr + at::linear(ctx, params["out_proj.weight"], params["out_proj.bias"]), {d},
                           params["norm.weight"], params["norm.bias"]);
  EXPECT_LE(max_abs(yf, yr), 1e-12);
  auto gf = torch::autograd::grad({(yf * w).sum()}, {hf})[0];
  auto gr = torch::autograd::grad({(yr * w).sum()}, {hr})[0];
  EXPECT_LE(max_abs(gf, gr), 1e-12);
}
