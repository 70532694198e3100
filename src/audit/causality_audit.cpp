#include "audit/causality_audit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "core/rng_guard.h"
#include "util/error.h"

namespace grassaudit {

InputSpec InputSpec::parse(const std::string& text) {
  auto colon = text.find(':');
  std::string kind = text.substr(0, colon);
  if (colon == std::string::npos || (kind != "tokens" && kind != "features"))
    throw InputError(fmt::format("--input must be tokens:V or features:C, got '{}'", text));
  std::string num = text.substr(colon + 1);
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(num, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (num.empty() || used != num.size() || n < 1)
    throw InputError(fmt::format("--input {}: '{}' is not a positive integer", kind, num));
  InputSpec s;
  s.kind = kind == "tokens" ? Kind::kTokens : Kind::kFeatures;
  s.size = n;
  return s;
}

std::string InputSpec::str() const {
  return fmt::format("{}:{}", kind == Kind::kTokens ? "tokens" : "features", size);
}

std::vector<int64_t> audit_length_schedule(int64_t L) {
  std::vector<int64_t> out{L};
  if (L - 1 >= 2) out.push_back(L - 1);
  for (int64_t l = L / 2; l >= 2; l /= 2)
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

// effect[t * L + c]: relative change of y_t when inputs from position c on (0-based; c > t)
// are replaced. One table per (mode, length) of a pass.
struct EffectTable {
  int64_t L = 0;
  std::vector<double> effect;
  double at(int64_t t, int64_t c) const { return effect[static_cast<size_t>(t * L + c)]; }
  double max() const { return effect.empty() ? 0.0 : *std::max_element(effect.begin(), effect.end()); }
  void raise(int64_t t, int64_t c, double v) {
    auto& e = effect[static_cast<size_t>(t * L + c)];
    e = std::max(e, v);
  }
};

struct Pass {
  at::ScalarType dtype;
  std::map<std::pair<std::string, int64_t>, EffectTable> tables;  // (mode, L)
  double max_effect = 0;
  int64_t probes = 0;
};

// Restores the target's dtype and mode and the global RNG state however the audit ends:
// the trainer's gate audits the live model and must not perturb training.
class TargetStateGuard {
 public:
  explicit TargetStateGuard(AuditTarget& t)
      : target_(t), dtype_(t.dtype()), training_(t.is_training()) {}
  ~TargetStateGuard() {
    try {
      if (target_.dtype() != dtype_) target_.to_dtype(dtype_, nullptr);
      target_.set_train(training_);
    } catch (...) {
    }
  }

 private:
  CpuRngGuard rng_;
  AuditTarget& target_;
  at::ScalarType dtype_;
  bool training_;
};

class Prober {
 public:
  Prober(AuditTarget& target, const AuditOptions& opt) : target_(target), opt_(opt), in_(target.input()) {}

  // rows x L (x C) random inputs from the audit's own generator (not the global one).
  at::Tensor random_inputs(int64_t rows, int64_t L, at::Generator& gen) {
    if (in_.kind == InputSpec::Kind::kTokens)
      return at::randint(0, in_.size, {rows, L}, gen, at::TensorOptions().dtype(at::kLong));
    return at::randn({rows, L, in_.size}, gen, at::TensorOptions().dtype(target_.dtype())) * in_.feature_scale;
  }

  // Runs the target and checks the output contract: [rows, L, ...] and finite.
  at::Tensor run(const at::Tensor& x) {
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
  void probe(const std::string& mode, int64_t L, EffectTable& table, Pass& pass, std::vector<int64_t> cuts = {}) {
    at::NoGradGuard no_grad;
    target_.set_train(mode == "train");
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
    const uint64_t seed = opt_.seed ^ (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(L + (mode == "train" ? 7919 : 0)));
    if (mode == "train") at::manual_seed(seed);
    auto y_base = run(base_batch);                                          // [chunk, L, K]
    auto scale = y_base.abs().amax({1, 2}).to(at::kDouble).clamp_min(1e-300);  // [chunk]
    for (int64_t start = 0; start < R; start += chunk) {
      const int64_t n = std::min(chunk, R - start);
      auto batch = rows.narrow(0, start, n);
      if (n < chunk) {  // pad with repeats of the last row to keep the shape
        auto last = batch.narrow(0, n - 1, 1);
        std::vector<int64_t> reps(static_cast<size_t>(batch.dim()), 1);
        reps[0] = chunk - n;
        batch = at::cat({batch, last.repeat(reps)}, 0);
      }
      if (mode == "train") at::manual_seed(seed);
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
  }

  // One (mode, length) table in the target's current dtype, every cut.
  EffectTable probe_table(const std::string& mode, int64_t L, Pass& pass) {
    EffectTable table;
    table.L = L;
    table.effect.assign(static_cast<size_t>(L * L), 0.0);
    probe(mode, L, table, pass);
    return table;
  }

  // The decisive re-run (in the target's current dtype) of only the cuts where `first` saw a
  // non-zero effect. A cut that moved nothing at all in float32 has nothing to tell apart:
  // its zeros stand (zero effect cells stay zero in the returned table).
  EffectTable rerun_nonzero(const std::string& mode, const EffectTable& first, Pass& pass) {
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

  // Non-vacuity: replace the first half, keep the rest; how much do later outputs move?
  double past_effect(int64_t L) {
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

  // Method 2: row i differentiates <w, y_{t_i}> w.r.t. every input embedding; entries s > t_i
  // must vanish. Returns G[t][s] = ||d<w, y_t>/d e_s||.
  std::vector<std::vector<double>> gradient_map(int64_t L) {
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

 private:
  AuditTarget& target_;
  const AuditOptions& opt_;
  InputSpec in_;
};

// Largest D with a leak (effect > threshold) in one table; also the first leaking cut.
struct TableVerdict {
  int64_t horizon = 0;
  std::optional<int64_t> first_cut;
};
TableVerdict judge(const EffectTable& tab, double threshold) {
  TableVerdict v;
  for (int64_t c = 1; c < tab.L; ++c)
    for (int64_t t = 0; t < c; ++t)
      if (tab.at(t, c) > threshold) {
        v.horizon = std::max(v.horizon, c - t);
        if (!v.first_cut || c < *v.first_cut) v.first_cut = c;
      }
  return v;
}

std::string dtype_name(at::ScalarType t) { return t == at::kDouble ? "float64" : t == at::kFloat ? "float32" : c10::toString(t); }

}  // namespace

AuditResult run_causality_audit(AuditTarget& target, const AuditOptions& opt) {
  auto t0 = Clock::now();
  if (opt.seq_len < 2) throw InputError(fmt::format("--seq-len must be >= 2, got {}", opt.seq_len));
  if (opt.trials < 1) throw InputError(fmt::format("--trials must be >= 1, got {}", opt.trials));
  if (opt.batch < 1) throw InputError(fmt::format("--batch must be >= 1, got {}", opt.batch));
  if (!opt.eval_mode && !opt.train_mode) throw InputError("audit needs at least one mode");

  AuditResult r;
  r.target = target.describe();
  r.weights_sha256 = target.weights_hash();
  r.seq_lens = opt.seq_lens.empty() ? audit_length_schedule(opt.seq_len) : opt.seq_lens;
  if (opt.eval_mode) r.modes.push_back("eval");
  if (opt.train_mode) r.modes.push_back("train");

  TargetStateGuard guard(target);
  Prober prober(target, opt);
  const int64_t L = r.seq_lens.front();

  // Non-vacuity first, in the target's own precision.
  r.past_effect = prober.past_effect(L);

  // Table by table, lengths outer and modes inner (both modes of the main length come first):
  // float32 (the target's dtype), then -- only if something moved -- the float64 re-run of the
  // cuts that moved. `first` tallies the float32 probes and effects; `decisive` holds the tables
  // the verdict uses.
  const at::ScalarType own_dtype = target.dtype();
  Pass first, decisive;
  decisive.dtype = own_dtype;
  double threshold = 0.0;
  bool float64_unavailable = false;
  std::vector<int64_t> lens_run;
  std::vector<std::string> modes_run;
  bool stop = false;
  for (size_t li = 0; li < r.seq_lens.size() && !stop; ++li) {
    const int64_t len = r.seq_lens[li];
    lens_run.push_back(len);
    for (size_t mi = 0; mi < r.modes.size() && !stop; ++mi) {
      const std::string& mode = r.modes[mi];
      if (std::find(modes_run.begin(), modes_run.end(), mode) == modes_run.end()) modes_run.push_back(mode);
      if (target.dtype() != own_dtype) target.to_dtype(own_dtype, nullptr);
      EffectTable t32 = prober.probe_table(mode, len, first);
      const double moved = t32.max();
      EffectTable chosen;
      if (moved == 0.0) {
        chosen = std::move(t32);  // exact zeros: nothing to tell apart
      } else if (own_dtype == at::kDouble) {
        chosen = std::move(t32);
        threshold = kLeakThreshold64;
        decisive.max_effect = std::max(decisive.max_effect, moved);
      } else {
        std::string why;
        if (!float64_unavailable && target.to_dtype(at::kDouble, &why)) {
          decisive.dtype = at::kDouble;
          threshold = kLeakThreshold64;
          chosen = prober.rerun_nonzero(mode, t32, decisive);
        } else {
          if (!float64_unavailable)
            r.notes.push_back(fmt::format(
                "float64 unavailable ({}): decided in float32 with threshold {:g}; leaks smaller than that are "
                "not detectable",
                why, kLeakThreshold32));
          float64_unavailable = true;
          threshold = kLeakThreshold32;
          decisive.max_effect = std::max(decisive.max_effect, moved);
          chosen = std::move(t32);
        }
      }
      const bool leaks = judge(chosen, threshold).horizon > 0;
      decisive.tables[{mode, len}] = std::move(chosen);
      const bool last = li + 1 == r.seq_lens.size() && mi + 1 == r.modes.size();
      if (leaks && opt.stop_when_leaky && !last) {
        stop = true;
        r.stopped_early = true;
        r.notes.push_back(fmt::format(
            "stopped at {} mode, L={}: the leak is proven there (gate setting); the remaining (mode, length) "
            "tables were not audited, and the horizon is that of the tables audited",
            mode, len));
      }
    }
  }
  if (float64_unavailable) decisive.dtype = own_dtype;
  // The gradient check runs in the decisive precision.
  if (target.dtype() != decisive.dtype) target.to_dtype(decisive.dtype, nullptr);
  r.max_effect_float32 = first.max_effect;
  r.seq_lens_planned = r.seq_lens;
  r.seq_lens = lens_run;
  r.modes_planned = r.modes;
  r.modes = modes_run;
  r.precision = dtype_name(decisive.dtype);
  r.probes = first.probes + decisive.probes;

  // Verdict, horizons and the map, from the decisive pass.
  std::map<std::string, int64_t> mode_h;
  std::map<int64_t, int64_t> len_h;
  for (const auto& kv : decisive.tables) {
    auto v = judge(kv.second, threshold);
    mode_h[kv.first.first] = std::max(mode_h[kv.first.first], v.horizon);
    len_h[kv.first.second] = std::max(len_h[kv.first.second], v.horizon);
    r.leak_horizon = std::max(r.leak_horizon, v.horizon);
    if (kv.first.second == L && v.first_cut && (!r.first_leaking_cut || *v.first_cut < *r.first_leaking_cut))
      r.first_leaking_cut = v.first_cut;
  }
  if (!r.first_leaking_cut && r.leak_horizon > 0) {  // leaks only at other lengths
    for (int64_t len : r.seq_lens)
      for (const auto& mode : r.modes) {
        auto it = decisive.tables.find({mode, len});
        if (it == decisive.tables.end()) continue;  // not audited (stopped early)
        auto v = judge(it->second, threshold);
        if (v.first_cut && !r.first_leaking_cut) r.first_leaking_cut = v.first_cut;
      }
  }
  for (const auto& mode : r.modes) r.mode_horizons.emplace_back(mode, mode_h[mode]);
  for (int64_t len : r.seq_lens) r.length_horizons.emplace_back(len, len_h[len]);
  r.verdict = r.leak_horizon > 0 ? "leaky" : "causal";
  r.max_effect = decisive.max_effect;
  r.rounding_only = r.verdict == "causal" && r.max_effect_float32 > 0.0;
  if (r.rounding_only)
    r.notes.push_back(fmt::format(
        "rounding only: float32 showed future effects up to {:.3g} (relative) that fall to {:.3g} in float64, "
        "below the {:g} leak threshold: arithmetic mixes positions at rounding level, outputs do not depend on "
        "the future",
        r.max_effect_float32, r.max_effect, kLeakThreshold64));

  r.map_seq_len = L;
  r.leak_map.assign(static_cast<size_t>(L), {});
  for (int64_t t = 0; t < L; ++t) {
    auto& row = r.leak_map[static_cast<size_t>(t)];
    for (int64_t D = 1; t + D < L; ++D) {
      double e = 0;
      for (const auto& mode : r.modes)
        if (auto it = decisive.tables.find({mode, L}); it != decisive.tables.end()) e = std::max(e, it->second.at(t, t + D));
      row.push_back(e > threshold ? e : 0.0);
    }
  }

  r.vacuous = r.past_effect == 0.0;
  if (r.vacuous)
    r.notes.push_back("vacuous: no output depends on earlier inputs either (replacing the first half moved nothing), "
                      "so 'causal' says little about this model");

  if (opt.gradient_check && target.supports_gradient()) {
    auto G = prober.gradient_map(L);
    double max_all = 0, max_future = 0;
    int64_t gh = 0;
    for (int64_t t = 0; t < L; ++t)
      for (int64_t s = 0; s < L; ++s) max_all = std::max(max_all, G[t][s]);
    if (!(max_all > 0)) max_all = 1;
    for (int64_t t = 0; t < L; ++t)
      for (int64_t s = t + 1; s < L; ++s) {
        double rel = G[t][s] / max_all;
        max_future = std::max(max_future, rel);
        if (rel > threshold) gh = std::max(gh, s - t);
      }
    r.gradient.ran = true;
    r.gradient.precision = dtype_name(target.dtype());
    r.gradient.max_future_grad = max_future;
    r.gradient.leak_horizon = gh;
    r.gradient.verdict = gh > 0 ? "leaky" : "causal";
    int64_t main_h = len_h[L];
    r.gradient.agrees = r.gradient.verdict == (main_h > 0 ? "leaky" : "causal") && gh == main_h;
    if (!r.gradient.agrees)
      r.notes.push_back(fmt::format("DISAGREEMENT: gradient method says {} (horizon {}), perturbation at L={} says "
                                    "horizon {}",
                                    r.gradient.verdict, gh, L, main_h));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

nlohmann::json to_json(const AuditResult& r) {
  nlohmann::json j;
  j["verdict"] = r.verdict;
  j["leak_horizon"] = r.leak_horizon;
  j["max_effect"] = r.max_effect;
  j["first_leaking_cut"] = r.first_leaking_cut ? nlohmann::json(*r.first_leaking_cut) : nlohmann::json(nullptr);
  j["modes"] = r.modes;
  j["seq_lens"] = r.seq_lens;
  j["rounding_only"] = r.rounding_only;
  j["stopped_early"] = r.stopped_early;
  j["seq_lens_planned"] = r.seq_lens_planned;
  j["modes_planned"] = r.modes_planned;
  j["probes"] = r.probes;
  j["seconds"] = r.seconds;
  j["precision"] = r.precision;
  j["max_effect_float32"] = r.max_effect_float32;
  j["threshold"] = r.precision == "float64" ? kLeakThreshold64 : (r.max_effect_float32 == 0 ? 0.0 : kLeakThreshold32);
  j["vacuous"] = r.vacuous;
  j["past_effect"] = r.past_effect;
  j["target"] = r.target;
  j["weights_sha256"] = r.weights_sha256;
  j["notes"] = r.notes;
  nlohmann::json mh = nlohmann::json::object();
  for (const auto& [m, h] : r.mode_horizons) mh[m] = h;
  j["mode_horizons"] = mh;
  nlohmann::json lh = nlohmann::json::object();
  for (const auto& [l, h] : r.length_horizons) lh[std::to_string(l)] = h;
  j["length_horizons"] = lh;
  if (r.gradient.ran) {
    j["gradient_check"] = {{"verdict", r.gradient.verdict},
                           {"leak_horizon", r.gradient.leak_horizon},
                           {"max_future_grad", r.gradient.max_future_grad},
                           {"precision", r.gradient.precision},
                           {"agrees", r.gradient.agrees}};
  } else {
    j["gradient_check"] = nullptr;
  }
  nlohmann::json cells = nlohmann::json::array();
  for (size_t t = 0; t < r.leak_map.size(); ++t)
    for (size_t k = 0; k < r.leak_map[t].size(); ++k)
      if (r.leak_map[t][k] > 0) cells.push_back({t, k + 1, r.leak_map[t][k]});
  j["leak_map"] = {{"seq_len", r.map_seq_len}, {"cells", cells}};
  return j;
}

std::string leak_map_csv(const AuditResult& r) {
  std::string out = "t,D,effect\n";
  for (size_t t = 0; t < r.leak_map.size(); ++t)
    for (size_t k = 0; k < r.leak_map[t].size(); ++k)
      if (r.leak_map[t][k] > 0) out += fmt::format("{},{},{:.6g}\n", t, k + 1, r.leak_map[t][k]);
  return out;
}

std::string summarize(const AuditResult& r) {
  std::string s = fmt::format("{}: {} (leak horizon {}, max effect {:.3g}, {} probes, {} precision, {:.2f} s)\n",
                              r.target, r.verdict == "leaky" ? "LEAKY" : "causal", r.leak_horizon, r.max_effect,
                              r.probes, r.precision, r.seconds);
  if (r.first_leaking_cut) s += fmt::format("  first leaking cut: {}\n", *r.first_leaking_cut);
  if (r.gradient.ran)
    s += fmt::format("  gradient check: {} (horizon {}, max future gradient {:.3g}, {})\n", r.gradient.verdict,
                     r.gradient.leak_horizon, r.gradient.max_future_grad, r.gradient.agrees ? "agrees" : "DISAGREES");
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  return s;
}

}  // namespace grassaudit
