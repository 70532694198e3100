// The bench command's contract (JSON fields, exit status 2 on bad flags) and the custom
// autograd backward passes of the fast Grassmann path (float64, against autograd of the literal
// formulas and against central finite differences).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bench/bench.h"
#include "core/attention_mixer.h"
#include "core/grassmann_mixer.h"
#include "core/pluecker.h"

using namespace grassaudit;

namespace {

struct RunResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the grassaudit binary with `args` (shell words), capturing stdout and stderr.
RunResult run_cli(const std::string& args) {
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(std::rand());
  const std::string out = ::testing::TempDir() + "bench_out_" + tag, err = ::testing::TempDir() + "bench_err_" + tag;
  const std::string cmd = std::string(GRASSAUDIT_BINARY) + " " + args + " >" + out + " 2>" + err;
  RunResult r;
  int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

const char* kSmall = "--batch 2 --seq-len 24 --d-model 32 --rank 6 --offsets 1,2,4 --heads 4 --reps 2 --warmup 1 --threads 1";

void expect_contract_fields(const nlohmann::json& j) {
  for (const char* key : {"mixer", "batch", "seq_len", "tokens_per_second", "ms_per_step", "threads", "peak_rss_mb",
                          "blas", "machine"})
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
  ASSERT_TRUE(j["ms_per_step"].is_object());
  for (const char* key : {"median", "min", "max"}) EXPECT_TRUE(j["ms_per_step"].contains(key)) << key;
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0);
  EXPECT_LE(j["ms_per_step"]["min"].get<double>(), j["ms_per_step"]["median"].get<double>());
  EXPECT_LE(j["ms_per_step"]["median"].get<double>(), j["ms_per_step"]["max"].get<double>());
  EXPECT_GT(j["peak_rss_mb"].get<double>(), 0);
  EXPECT_EQ(j["threads"].get<int>(), 1);
  EXPECT_FALSE(j["blas"].get<std::string>().empty());
  EXPECT_FALSE(j["machine"].get<std::string>().empty());
}

}  // namespace

TEST(BenchCli, LayerJsonHasEveryContractField) {
  const std::string path = ::testing::TempDir() + "bench_layer_" + std::to_string(::getpid()) + ".json";
  auto r = run_cli(std::string("bench --mixer past ") + kSmall + " --json " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  auto printed = nlohmann::json::parse(r.out);
  auto written = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(printed, written);
  expect_contract_fields(written);
  EXPECT_EQ(written["mixer"], "past");
  EXPECT_EQ(written["batch"], 2);
  EXPECT_EQ(written["seq_len"], 24);
  EXPECT_NE(r.err.find("BLAS"), std::string::npos) << "runtime banner expected on stderr";
  std::remove(path.c_str());
}

TEST(BenchCli, SeveralMixersInterleavedGiveResultsArray) {
  auto r = run_cli(std::string("bench --mixer past,attention,literal-future --offset-mode per-layer ") + kSmall);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("results"));
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][1]["mixer"], "attention");
  for (const auto& e : j["results"]) expect_contract_fields(e);
}

TEST(BenchCli, FixedTokenSweepInOneRun) {
  auto r = run_cli("bench --mixer past,attention --tokens 96 --seq-len 24,48 --d-model 16 --rank 4 --offsets 1,2 "
                   "--reps 1 --warmup 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][0]["seq_len"], 24);
  EXPECT_EQ(j["results"][0]["batch"], 4);
  EXPECT_EQ(j["results"][3]["seq_len"], 48);
  EXPECT_EQ(j["results"][3]["batch"], 2);
  EXPECT_EQ(j["results"][3]["mixer"], "attention");
}

TEST(BenchCli, ModelStepReportsFlops) {
  auto r = run_cli(
      "bench --model paper-6l-L128 --mixer past --vocab-size 64 --d-model 32 --rank 4 --d-ff 64 --batch 2 "
      "--seq-len 24 --reps 1 --warmup 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  expect_contract_fields(j);
  EXPECT_EQ(j["mixer"], "paper-6l-L128:past");
  EXPECT_GT(j["achieved_gflops"].get<double>(), 0);
  EXPECT_GT(j["gemm_gflops"].get<double>(), 0);
}

TEST(BenchCli, BadFlagsExitTwo) {
  const std::string base = "bench --threads 1 --reps 1 --warmup 0 --d-model 16 --rank 4 --seq-len 24 --batch 1 ";
  for (const std::string bad :
       {"--mixer past --batch 0", "--mixer past --seq-len abc", "--mixer past --reps 0", "--mixer past --bogus 1",
        "--mixer past --offset-mode sideways", "--mixer past --offsets 1,x", "--mixer past --offsets 30",
        "--mixer attention --heads 3", "--mixer past --rank 1", "--mixer past stray", "--batch 2",
        "--model no-such-preset --mixer past", "--mixer past --warmup -1", "--mixer past --tokens 10",
        "--mixer past --tokens 48 --batch 2", "--mixer past --seq-len 24,1"}) {
    auto r = run_cli(base + bad);
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("grassaudit bench: error:"), std::string::npos) << bad << "\n" << r.err;
  }
  auto r = run_cli(base + "--mixer nonesuch");
  EXPECT_EQ(r.status, 2);
  for (const char* name : {"attention", "future", "past", "literal-past", "literal-future"})
    EXPECT_NE(r.err.find(name), std::string::npos) << "valid names should be listed: " << r.err;
}

TEST(BenchUnits, PeakRssAndLayerConfig) {
  EXPECT_GT(peak_rss_mb(), 1.0);
  LayerBenchOptions o;
  o.model.offsets = {3, 5, 7};
  o.model.offset_mode = "per-layer";
  auto c = layer_bench_config(o, "past", 16);
  EXPECT_EQ(c.layer_offsets(0), std::vector<int64_t>{3});  // per-layer: offsets[0] only
  o.model.offset_mode = "all";
  c = layer_bench_config(o, "past", 16);
  EXPECT_EQ(c.layer_offsets(0), (std::vector<int64_t>{3, 5, 7}));
}

// ---- custom autograd backward passes, float64 ---------------------------------------------

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
