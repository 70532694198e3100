#include "audit/audit_prober.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>  // at::NoGradGuard: no longer reached through ATen.h in LibTorch 2.x
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/autograd.h>

#include "audit/audit_shard.h"
#include "util/error.h"

namespace grassaudit {

Prober::Prober(AuditTarget& target, const AuditOptions& opt) : target_(target), opt_(opt), in_(target.input()) {}

// x: [rows, L] int64 tokens, or [rows, L, C] features in the target's dtype.
at::Tensor Prober::random_inputs(int64_t rows, int64_t L, at::Generator& gen) {
  if (in_.kind == InputSpec::Kind::kTokens)
    return at::randint(0, in_.size, {rows, L}, gen, at::TensorOptions().dtype(at::kLong));
  return at::randn({rows, L, in_.size}, gen, at::TensorOptions().dtype(target_.dtype())) * in_.feature_scale;
}

// x: [rows, L(, C)] -> y: [rows, L, K], detached; InputError on a broken contract.
at::Tensor Prober::run(const at::Tensor& x) {
  auto y = target_.forward(x);
  const int64_t rows = x.size(0), L = x.size(1);
  if (y.dim() < 2 || y.size(0) != rows || y.size(1) != L)
    throw InputError(fmt::format("{}: output shape [{}] does not start with [B, L] = [{}, {}]", target_.describe(),
                                 fmt::join(y.sizes().vec(), ", "), rows, L));
  if (!at::isFloatingType(y.scalar_type()))
    throw InputError(fmt::format("{}: output dtype {} is not floating point", target_.describe(),
                                 c10::toString(y.scalar_type())));
  y = y.detach().reshape({rows, L, -1});
  if (!at::isfinite(y).all().item<bool>())
    throw InputError(fmt::format("{}: model returned NaN or Inf outputs", target_.describe()));
  return y;
}

// One mode at one length, all trials. Probe rows are ordered (cut, trial): row r tests cut
// c = r / T + 1 of trial r % T, with inputs from position c on (0-based) replaced. Chunks hold
// a multiple of T rows (the last one padded with repeats), so row i of EVERY chunk belongs to
// trial i % T and one base pass -- the T base sequences tiled to the chunk's shape -- serves
// all chunks. Same shape, same rows: unaffected positions go through bit-identical arithmetic
// (rows at different batch positions can round differently in GEMM kernels: measured 2.6e-7
// on a causal model). Train mode resets the RNG to the same state before every pass, so row i
// sees the same dropout mask in the base and in each probe pass.
//
// cuts: the cuts to probe (ascending), empty for all of 1..L-1. A subset probes exactly the
// rows the full pass would (same seed, same fresh draws), which is how the float64 re-run
// repeats only the cuts that showed something in float32.
void Prober::probe(AuditMode mode, int64_t L, EffectTable& table, Pass& pass, std::vector<int64_t> cuts) {
  at::NoGradGuard no_grad;
  const bool train = mode == AuditMode::kTrain;
  target_.set_train(train);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(opt_.seed * 1000003ULL + static_cast<uint64_t>(L));
  if (cuts.empty())
    for (int64_t c = 1; c < L; ++c) cuts.push_back(c);
  const int64_t T = opt_.trials, R_all = T * (L - 1), R = T * static_cast<int64_t>(cuts.size());
  const int64_t chunk = std::max<int64_t>(1, opt_.batch / T) * T;
  auto bases = random_inputs(T, L, gen);                                  // [T, L(, C)]
  auto fresh_all = random_inputs(R_all, L, gen);                          // [T * (L-1), L(, C)]
  auto cut_of = at::tensor(cuts, at::kLong);                              // [R / T]
  auto row_trial = at::arange(R, at::kLong).remainder(T);                 // [R]
  auto row_cut = cut_of.index_select(0, at::arange(R, at::kLong).div(T, "floor"));  // [R]
  auto fresh = fresh_all.index_select(0, row_cut.sub(1).mul(T).add(row_trial));      // [R, L(, C)]
  auto replace = at::arange(L, at::kLong).view({1, L}).ge(row_cut.view({R, 1}));  // [R, L]
  if (bases.dim() == 3) replace = replace.unsqueeze(-1);
  auto rows = at::where(replace, fresh, bases.index_select(0, row_trial));
  auto base_batch = bases.index_select(0, at::arange(chunk, at::kLong).remainder(T)).contiguous();
  const uint64_t seed = opt_.seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(L + (train ? 7919 : 0)));
  if (train) at::manual_seed(seed);
  auto y_base = run(base_batch);                                          // [chunk, L, K]
  auto scale = y_base.abs().amax({1, 2}).to(at::kDouble).clamp_min(1e-300);  // [chunk]
  const int64_t probes_before = pass.probes;
  for (int64_t start = 0; start < R; start += chunk) {
    if (!audit_owns_chunk(start / chunk)) continue;  // data-parallel: another rank's chunk (audit_shard.h)
    const int64_t n = std::min(chunk, R - start);
    auto batch = rows.narrow(0, start, n);
    if (n < chunk) {  // pad with repeats of the last row to keep the shape
      auto last = batch.narrow(0, n - 1, 1);
      std::vector<int64_t> reps(static_cast<size_t>(batch.dim()), 1);
      reps[0] = chunk - n;
      batch = at::cat({batch, last.repeat(reps)}, 0);
    }
    if (train) at::manual_seed(seed);
    auto y = run(batch.contiguous());
    // diff[i, t]: max over features of |y - y_base| at position t of probe row i, relative.
    auto diff = (y - y_base).abs().amax(-1).to(at::kDouble).div(scale.view({chunk, 1})).contiguous();
    auto acc = diff.accessor<double, 2>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = cuts[static_cast<size_t>((start + i) / T)];  // positions 0..c-1 kept
      for (int64_t t = 0; t < c; ++t) {
        double v = acc[i][t];
        table.raise(t, c, v);
        pass.max_effect = std::max(pass.max_effect, v);
      }
    }
    pass.probes += n;
  }
  audit_reduce_table(table, pass, probes_before);
}

EffectTable Prober::probe_table(AuditMode mode, int64_t L, Pass& pass) {
  EffectTable table;
  table.L = L;
  table.effect.assign(static_cast<size_t>(L * L), 0.0);
  probe(mode, L, table, pass);
  return table;
}

EffectTable Prober::rerun_nonzero(AuditMode mode, const EffectTable& first, Pass& pass) {
  EffectTable table;
  table.L = first.L;
  table.effect.assign(first.effect.size(), 0.0);
  std::vector<int64_t> cuts;
  for (int64_t c = 1; c < first.L; ++c)
    for (int64_t t = 0; t < c; ++t)
      if (first.at(t, c) > 0) {
        cuts.push_back(c);
        break;
      }
  if (!cuts.empty()) probe(mode, first.L, table, pass, cuts);
  return table;
}

// Eval mode, trials pairs of [1, L(, C)] sequences that differ only before L/2.
double Prober::past_effect(int64_t L) {
  at::NoGradGuard no_grad;
  target_.set_train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(opt_.seed + 17);
  const int64_t c = std::max<int64_t>(1, L / 2);
  double worst = 0;
  for (int64_t trial = 0; trial < std::max<int64_t>(1, opt_.trials); ++trial) {
    auto base = random_inputs(1, L, gen);
    auto fresh = random_inputs(1, L, gen);
    auto pos = at::arange(L, at::kLong).view({1, L});
    auto replace = pos.lt(c);
    if (base.dim() == 3) replace = replace.unsqueeze(-1);
    auto y = run(at::cat({base, at::where(replace, fresh, base)}, 0));
    auto scale = std::max(y[0].abs().max().item<double>(), 1e-300);
    auto d = (y[1] - y[0]).narrow(0, c, L - c).abs().max().item<double>() / scale;
    worst = std::max(worst, d);
  }
  return worst;
}

// One base sequence [1, L(, C)] expanded to chunks of rows [n, L(, C)]; row i picks output t_i.
std::vector<std::vector<double>> Prober::gradient_map(int64_t L) {
  target_.set_train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(opt_.seed + 29);
  auto base = random_inputs(1, L, gen);
  std::vector<std::vector<double>> G(static_cast<size_t>(L), std::vector<double>(static_cast<size_t>(L), 0.0));
  at::Tensor w;
  const int64_t chunk = std::max<int64_t>(1, opt_.batch);
  for (int64_t start = 0; start < L; start += chunk) {
    const int64_t n = std::min(chunk, L - start);
    auto x = base.expand(base.dim() == 2 ? std::vector<int64_t>{n, L} : std::vector<int64_t>{n, L, base.size(2)})
                 .contiguous();
    auto e = target_.embed(x).detach().clone().requires_grad_(true);
    auto y = target_.forward_from_embedding(e);
    y = y.reshape({n, L, -1});
    if (!w.defined()) w = at::randn({y.size(2)}, gen, at::TensorOptions().dtype(y.scalar_type()));
    auto t_idx = at::arange(start, start + n, at::kLong);
    auto picked = y.index({at::arange(n, at::kLong), t_idx});  // [n, K]
    auto loss = (picked * w).sum();
    auto g = torch::autograd::grad({loss}, {e}, /*grad_outputs=*/{}, /*retain_graph=*/false)[0];
    auto norms = g.reshape({n, L, -1}).to(at::kDouble).pow(2).sum(-1).sqrt().contiguous();
    auto acc = norms.accessor<double, 2>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t s = 0; s < L; ++s) G[static_cast<size_t>(start + i)][static_cast<size_t>(s)] = acc[i][s];
  }
  return G;
}

}  // namespace grassaudit
