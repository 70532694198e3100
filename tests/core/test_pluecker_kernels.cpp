// The custom autograd backward passes of the fast Grassmann path (pluecker.h: wedge, partner
// mean; the fused gate blend), float64, against autograd of the literal formulas and against
// central finite differences. (Moved from tests/bench: they test core kernels, not the bench.)
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "core/grassmann_mixer.h"
#include "core/pluecker.h"

using namespace grassaudit;

namespace {

at::TensorOptions f64() { return at::TensorOptions().dtype(at::kDouble); }

double max_abs(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

// The partner mean written with autograd primitives (what geometry_fast did before the fused
// kernel): the reference for pluecker_partner_mean.
at::Tensor partner_mean_reference(const at::Tensor& z, const std::vector<int64_t>& offsets, bool future, double eps) {
  const int64_t L = z.size(1);
  auto z2 = (z * z).sum(-1);
  auto c = z * 0.0;  // zeros, but connected to z (no usable offset: a zero gradient, not an error)
  auto count = at::zeros({L}, z.options());
  for (int64_t D : offsets) {
    if (D >= L) continue;
    auto anchor = future ? z.narrow(1, 0, L - D) : z.narrow(1, D, L - D);
    auto partner = future ? z.narrow(1, D, L - D) : z.narrow(1, 0, L - D);
    auto a2 = future ? z2.narrow(1, 0, L - D) : z2.narrow(1, D, L - D);
    auto b2 = future ? z2.narrow(1, D, L - D) : z2.narrow(1, 0, L - D);
    auto ab = (anchor * partner).sum(-1);
    auto norm = wedge_norm_from_gram(a2, b2, ab, eps);
    const int64_t start = future ? 0 : D;
    c = c + at::constant_pad_nd(partner / norm.unsqueeze(-1), {0, 0, start, D - start}, 0.0);
    count.narrow(0, start, L - D).add_(1);
  }
  return c / count.clamp_min(1).view({1, L, 1});
}

// Central finite differences of sum(f(x) * w) with respect to x, float64.
at::Tensor numeric_grad(const std::function<at::Tensor(const at::Tensor&)>& f, const at::Tensor& x,
                        const at::Tensor& w, double h = 1e-6) {
  auto g = at::zeros_like(x);
  auto xf = x.detach().clone();
  auto flat = xf.view({-1});
  auto gflat = g.view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double v = flat[i].item<double>();
    flat[i] = v + h;
    const double up = (f(xf) * w).sum().item<double>();
    flat[i] = v - h;
    const double down = (f(xf) * w).sum().item<double>();
    flat[i] = v;
    gflat[i] = (up - down) / (2 * h);
  }
  return g;
}

}  // namespace

TEST(CustomBackward, WedgeMatchesIndexSelectPlueckerFloat64) {
  at::manual_seed(3);
  for (int64_t r : {2, 3, 5, 8, 32}) {
    auto a = at::randn({3, 7, r}, f64()).requires_grad_(true);
    auto c = at::randn({3, 7, r}, f64()).requires_grad_(true);
    auto w = at::randn({3, 7, pluecker_dim(r)}, f64());
    auto fast = pluecker_wedge(a, c);
    auto ref = pluecker_coords(a, c);
    EXPECT_LE(max_abs(fast, ref), 1e-15) << "r " << r;
    auto gf = torch::autograd::grad({(fast * w).sum()}, {a, c});
    auto gr = torch::autograd::grad({(ref * w).sum()}, {a, c});
    EXPECT_LE(max_abs(gf[0], gr[0]), 1e-12) << "r " << r;
    EXPECT_LE(max_abs(gf[1], gr[1]), 1e-12) << "r " << r;
  }
  // Finite differences on a tiny case.
  auto a = at::randn({2, 4}, f64()), c = at::randn({2, 4}, f64());
  auto w = at::randn({2, pluecker_dim(4)}, f64());
  auto ar = a.clone().requires_grad_(true);
  auto ga = torch::autograd::grad({(pluecker_wedge(ar, c) * w).sum()}, {ar})[0];
  auto na = numeric_grad([&](const at::Tensor& x) { return pluecker_wedge(x, c); }, a, w);
  EXPECT_LE(max_abs(ga, na), 1e-8);
}

TEST(CustomBackward, PartnerMeanMatchesAutogradFloat64) {
  at::manual_seed(5);
  struct Case {
    std::vector<int64_t> offsets;
    int64_t L;
  };
  for (bool future : {false, true}) {
    for (const Case& cs : {Case{{1, 2, 4, 8, 12, 16}, 20}, Case{{3}, 9}, Case{{1, 1, 5, 30}, 7}, Case{{2, 9}, 3},
                           Case{{1, 2}, 1}}) {
      auto z = at::randn({2, cs.L, 6}, f64());
      if (cs.L > 2) z[0][1] = z[0][0] * 2.0;  // exactly parallel (x == 0 in both): the eps clamp path
      auto zf = z.clone().requires_grad_(true), zr = z.clone().requires_grad_(true);
      auto w = at::randn({2, cs.L, 6}, f64());
      auto cf = pluecker_partner_mean(zf, cs.offsets, future, 1e-8);
      auto cr = partner_mean_reference(zr, cs.offsets, future, 1e-8);
      EXPECT_LE(max_abs(cf, cr), 1e-12 * std::max(1.0, cr.abs().max().item<double>()));
      auto gf = torch::autograd::grad({(cf * w).sum()}, {zf})[0];
      auto gr = torch::autograd::grad({(cr * w).sum()}, {zr})[0];
      EXPECT_LE(max_abs(gf, gr), 1e-12 * std::max(1.0, gr.abs().max().item<double>()))
          << (future ? "future" : "past") << " L " << cs.L;
    }
  }
  // Finite differences (no degenerate pairs).
  auto z = at::randn({1, 6, 4}, f64());
  auto w = at::randn({1, 6, 4}, f64());
  auto zr = z.clone().requires_grad_(true);
  auto g = torch::autograd::grad({(pluecker_partner_mean(zr, {1, 3}, false, 1e-8) * w).sum()}, {zr})[0];
  auto n = numeric_grad([](const at::Tensor& x) { return pluecker_partner_mean(x, {1, 3}, false, 1e-8); }, z, w);
  EXPECT_LE(max_abs(g, n), 1e-6 * std::max(1.0, n.abs().max().item<double>()));
}

// The fused gate blend is only reachable through forward_fast: compare the input gradient
// (fast_vs_literal compares outputs and parameter gradients) against the literal path.
TEST(CustomBackward, FastLayerInputGradientMatchesLiteralFloat64) {
  for (auto dir : {PairDirection::kPast, PairDirection::kFuture}) {
    GrassmannOptions o;
    o.d_model = 24;
    o.rank = 6;
    o.offsets = {1, 2, 4, 4, 9};
    o.direction = dir;
    at::manual_seed(9);
    auto mixer = std::make_shared<GrassmannMixerImpl>(o);
    mixer->to(at::kDouble);
    mixer->eval();
    auto h = at::randn({2, 11, 24}, f64());
    auto w = at::randn({2, 11, 24}, f64());
    auto hf = h.clone().requires_grad_(true), hl = h.clone().requires_grad_(true);
    auto gf = torch::autograd::grad({(mixer->forward_fast(hf) * w).sum()}, {hf})[0];
    auto gl = torch::autograd::grad({(mixer->forward_literal(hl) * w).sum()}, {hl})[0];
    EXPECT_LE(max_abs(gf, gl), 1e-12);
  }
}
