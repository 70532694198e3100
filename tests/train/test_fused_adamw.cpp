// FusedAdamW (train/fused_adamw.h) against LibTorch's AdamW: the same updates to float32
// rounding over several steps, LibTorch's state layout (checkpoints load into either), the
// AVX-512 loop and the one-element path bit for bit, and the op-for-op fallback exact.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/serialize.h>
#include <torch/optim/adamw.h>

#include <sstream>

#include "train/fused_adamw.h"

namespace grassaudit {
namespace {

std::vector<at::Tensor> params(int seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> out;
  for (auto shape : std::vector<std::vector<int64_t>>{{33, 17}, {1000}, {5}, {64, 48}})
    out.push_back(at::randn(shape).requires_grad_(true));
  return out;
}

void set_grads(std::vector<at::Tensor>& ps, int step) {
  at::manual_seed(100 + step);
  for (auto& p : ps) p.mutable_grad() = at::randn(p.sizes());
}

torch::optim::AdamWOptions options() { return torch::optim::AdamWOptions(3e-3).betas({0.9, 0.98}).eps(1e-8).weight_decay(0.05); }

TEST(FusedAdamW, MatchesLibTorchAdamWToFloatRounding) {
  auto a = params(1), b = params(1);
  torch::optim::AdamW reference(a, options());
  FusedAdamW fused(b, options());
  for (int step = 0; step < 6; ++step) {
    set_grads(a, step);
    set_grads(b, step);
    reference.step();
    fused.step();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = a[i].abs().max().item<double>();
    EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), 1e-5 * scale) << "parameter " << i;
    EXPECT_FALSE(at::equal(a[i], params(1)[i])) << "the parameter moved";
  }
  ASSERT_EQ(reference.state().size(), fused.state().size());  // one LibTorch state per parameter
}

TEST(FusedAdamW, CheckpointsLoadIntoLibTorchAdamW) {
  auto b = params(2);
  FusedAdamW fused(b, options());
  for (int step = 0; step < 3; ++step) {
    set_grads(b, step);
    fused.step();
  }
  std::stringstream buffer;
  torch::save(fused, buffer);
  auto c = params(2);
  torch::optim::AdamW loaded(c, options());
  torch::load(loaded, buffer);
  ASSERT_EQ(loaded.state().size(), b.size());
  // The loaded moments continue the run: one more step of each from equal parameters agrees.
  for (size_t i = 0; i < b.size(); ++i) c[i].detach().copy_(b[i].detach());
  set_grads(b, 3);
  set_grads(c, 3);
  fused.step();
  loaded.step();
  for (size_t i = 0; i < b.size(); ++i)
    EXPECT_LT((b[i] - c[i]).abs().max().item<double>(), 1e-5 * b[i].abs().max().item<double>());
}

TEST(FusedAdamW, ItsOwnCheckpointResumesItsState) {
  // A resumed FusedAdamW must find the loaded moments under its keys (a key it formats unlike
  // LibTorch would start every parameter from zero moments, silently).
  auto b = params(4);
  FusedAdamW fused(b, options());
  for (int step = 0; step < 3; ++step) {
    set_grads(b, step);
    fused.step();
  }
  std::stringstream buffer;
  torch::save(fused, buffer);
  auto c = params(4);
  for (size_t i = 0; i < b.size(); ++i) c[i].detach().copy_(b[i].detach());
  FusedAdamW resumed(c, options());
  torch::load(resumed, buffer);
  set_grads(b, 3);
  set_grads(c, 3);
  fused.step();
  resumed.step();
  EXPECT_EQ(resumed.state().size(), c.size());  // no fresh state next to the loaded one
  for (size_t i = 0; i < b.size(); ++i) EXPECT_TRUE(at::equal(b[i], c[i])) << "parameter " << i;
}

TEST(FusedAdamW, VectorLoopEqualsOneElementAtATime) {
  // n = 16 * 3 + 5: the AVX-512 body and its scalar tail; the thread split moves the tail.
  const int64_t n = 53;
  at::manual_seed(7);
  const at::Tensor p0 = at::randn({n}), g = at::randn({n}), m0 = at::randn({n}) * 0.1, v0 = at::rand({n}) * 0.01;
  const AdamWCoefficients c{0.9999f, 0.9f, 0.1f, 0.98f, 0.02f, 1.3f, 1e-8f, -1e-3f};
  auto run = [&](int64_t split) {
    at::Tensor p = p0.clone(), m = m0.clone(), v = v0.clone();
    fused_adamw_update(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), split, c);
    fused_adamw_update(p.data_ptr<float>() + split, g.data_ptr<float>() + split, m.data_ptr<float>() + split,
                       v.data_ptr<float>() + split, n - split, c);
    return at::cat({p, m, v});
  };
  const at::Tensor whole = run(0);
  for (int64_t split : {1, 3, 16, 17, 37}) EXPECT_TRUE(at::equal(run(split), whole)) << "split " << split;
}

TEST(FusedAdamW, UnfusableParametersTakeLibTorchsOpsExactly) {
  // amsgrad: the op-for-op path, equal to LibTorch bit for bit.
  auto a = params(3), b = params(3);
  torch::optim::AdamW reference(a, options().amsgrad(true));
  FusedAdamW fused(b, options().amsgrad(true));
  for (int step = 0; step < 3; ++step) {
    set_grads(a, step);
    set_grads(b, step);
    reference.step();
    fused.step();
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "parameter " << i;
}

}  // namespace
}  // namespace grassaudit
