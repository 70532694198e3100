#include "bench/bench.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <functional>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/op_profile.h"
#include "core/language_model.h"
#include "core/lm_loss.h"
#include "core/pluecker.h"
#include "runtime/cpu_features.h"
#include "runtime/runtime.h"
#include "core/token_mixer.h"
#include "train/fused_adamw.h"
#include "util/error.h"

namespace grassaudit {

double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream in(line.substr(6));
      double kb = 0;
      in >> kb;
      return kb / 1024.0;
    }
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

int64_t layer_bench_batch(const LayerBenchOptions& o, int64_t seq_len) {
  if (o.tokens > 0) {
    if (o.tokens < seq_len)
      throw InputError(fmt::format("--tokens {} is below --seq-len {} (batch would be 0)", o.tokens, seq_len));
    return o.tokens / seq_len;
  }
  if (o.batch < 1) throw InputError(fmt::format("--batch must be >= 1, got {}", o.batch));
  return o.batch;
}

ModelConfig layer_bench_config(const LayerBenchOptions& o, const std::string& mixer, int64_t seq_len) {
  if (seq_len < 2) throw InputError(fmt::format("--seq-len must be >= 2, got {}", seq_len));
  layer_bench_batch(o, seq_len);
  if (o.reps < 1) throw InputError(fmt::format("--reps must be >= 1, got {}", o.reps));
  if (o.warmup < 0) throw InputError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  ModelConfig c = o.model;
  c.mixer = mixer;
  c.max_len = seq_len;
  c.vocab_size = std::max<int64_t>(c.vocab_size, 2);
  if (c.offset_mode == "per-layer") {
    // One benchmarked layer of a per-layer schedule: layer 0, i.e. offsets[0] only.
    if (c.offsets.empty()) throw InputError("--offsets must not be empty");
    c.offsets = {c.offsets.front()};
  }
  c.layers = 1;
  c.validate();
  return c;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  std::vector<double> ms;
  std::vector<double> unit;  // the unit rate measured before each timed step (when asked)
  double peak = 0;
};

void fill_timing(BenchTiming& t, Stats& s, int64_t tokens) {
  set_throughput(t, s.ms, static_cast<double>(tokens));
  t.peak_rss_mb = s.peak;
}

// Times `step` once, with the peak RSS of that call (reset before it where the kernel allows).
double timed(const std::function<void()>& step, Stats& s) {
  reset_peak_rss();
  auto t0 = Clock::now();
  step();
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  s.ms.push_back(ms);
  s.peak = std::max(s.peak, peak_rss_mb());
  return ms;
}

// Interleaved reps: warm-up every entry, then for each rep run every entry once (each step
// preceded by a measurement of the unit rate when `unit` is given).
std::vector<Stats> run_interleaved(const std::vector<std::function<void()>>& steps, int warmup, int reps,
                                   const std::function<double()>& unit = {}) {
  for (const auto& step : steps)
    for (int i = 0; i < warmup; ++i) step();
  std::vector<Stats> stats(steps.size());
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < steps.size(); ++k) {
      if (unit) stats[k].unit.push_back(unit());
      timed(steps[k], stats[k]);
    }
  return stats;
}

// The median over reps of (flops / step seconds) / the unit rate measured before that step.
// Reads s.ms in rep order: call before fill_timing sorts it.
double median_fraction_beside(const Stats& s, double flops) {
  std::vector<double> f;
  for (size_t i = 0; i < s.ms.size() && i < s.unit.size(); ++i)
    if (s.unit[i] > 0 && s.ms[i] > 0) f.push_back(flops / (s.ms[i] / 1e3) / 1e9 / s.unit[i]);
  if (f.empty()) return 0;
  std::sort(f.begin(), f.end());
  const size_t n = f.size();
  return n % 2 ? f[n / 2] : 0.5 * (f[n / 2 - 1] + f[n / 2]);
}

}  // namespace

std::vector<BenchTiming> bench_layers(const LayerBenchOptions& o) {
  if (o.mixers.empty()) throw InputError("--mixer is required");
  for (const auto& m : o.mixers) MixerRegistry::instance().check_name(m);
  struct Entry {
    std::string mixer;
    int64_t batch, seq_len;
    std::shared_ptr<TokenMixerImpl> layer;
    at::Tensor h;
  };
  std::vector<Entry> entries;
  std::vector<std::function<void()>> steps;
  for (int64_t L : o.seq_lens)
    for (const auto& m : o.mixers) layer_bench_config(o, m, L);  // every value checked before any work
  for (int64_t L : o.seq_lens) {
    for (const auto& m : o.mixers) {
      ModelConfig cfg = layer_bench_config(o, m, L);
      at::manual_seed(0);
      Entry e;
      e.mixer = m;
      e.batch = layer_bench_batch(o, L);
      e.seq_len = L;
      e.layer = MixerRegistry::instance().create(cfg, 0);
      e.layer->train();
      e.h = at::randn({e.batch, L, cfg.d_model}).requires_grad_(true);
      entries.push_back(e);
    }
  }
  for (auto& e : entries) {
    steps.push_back([&e] {
      for (auto& p : e.layer->parameters()) p.mutable_grad() = at::Tensor();
      e.h.mutable_grad() = at::Tensor();
      auto y = e.layer->forward(e.h);
      y.square().mean().backward();
    });
  }
  auto stats = run_interleaved(steps, o.warmup, o.reps);
  std::vector<BenchTiming> out;
  for (size_t k = 0; k < entries.size(); ++k) {
    BenchTiming t;
    t.mixer = entries[k].mixer;
    t.batch = entries[k].batch;
    t.seq_len = entries[k].seq_len;
    t.reps = o.reps;
    t.warmup = o.warmup;
    fill_timing(t, stats[k], t.batch * t.seq_len);
    out.push_back(t);
  }
  return out;
}

double training_step_flops(const ModelConfig& c, int64_t B, int64_t L) {
  const double d = static_cast<double>(c.d_model), N = static_cast<double>(B * L);
  double per_token = 0;  // forward multiply-adds x 2, per token
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    per_token += 2.0 * 2.0 * d * static_cast<double>(c.d_ff);  // FFN
    if (c.mixer == "attention") {
      per_token += 2.0 * 4.0 * d * d;                          // in_proj (3d^2) + out_proj (d^2)
      // scores and weighted sum over the keys actually computed: all L below the chunking
      // threshold (masked entries included), about (L + 256) / 2 above it.
      const double keys = L < 1024 ? static_cast<double>(L) : 0.5 * static_cast<double>(L + 256);
      per_token += 2.0 * 2.0 * keys * d;
    } else {
      const double r = static_cast<double>(c.rank);
      const double C = static_cast<double>(pluecker_dim(c.rank));
      per_token += 2.0 * d * r + 2.0 * C * d + 2.0 * 2.0 * d * d;  // reduce, W_plu, gate
      if (c.mixer.rfind("literal-", 0) == 0)                      // one projection per offset
        per_token += 2.0 * C * d * (static_cast<double>(c.layer_offsets(layer).size()) - 1.0);
    }
  }
  per_token += 2.0 * d * static_cast<double>(c.vocab_size);     // tied head
  return 3.0 * per_token * N;                                   // forward + backward (2x)
}

void check_model_bench(const ModelBenchOptions& o) {
  if (o.mixers.empty()) throw InputError("--mixer is required");
  if (o.batch < 1) throw InputError(fmt::format("--batch must be >= 1, got {}", o.batch));
  if (o.reps < 1) throw InputError(fmt::format("--reps must be >= 1, got {}", o.reps));
  if (o.warmup < 0) throw InputError(fmt::format("--warmup must be >= 0, got {}", o.warmup));
  if (o.loss_impls.empty()) throw InputError("--loss-impl needs at least one of fused, materialized");
  if (std::count(o.loss_impls.begin(), o.loss_impls.end(), LossImpl::kFused) > 0 && o.loss_chunks.empty())
    throw InputError("--loss-chunk needs at least one size");
  for (int64_t c : o.loss_chunks)
    if (c < 1) throw InputError(fmt::format("--loss-chunk must be >= 1, got {}", c));
  for (const auto& m : o.mixers) {
    ModelConfig c = o.model;
    c.mixer = m;
    c.validate();
  }
  if (o.precisions.empty()) throw InputError("--precision needs at least one of fp32, bf16");
  for (const auto& p : o.precisions) {
    if (p != "fp32" && p != "bf16") throw InputError(fmt::format("--precision must be fp32 or bf16, got '{}'", p));
    std::string why;
    if (p == "bf16" && !cpu_has_native_bf16(detect_cpu_features(), &why))
      throw InputError("--precision bf16 on CPU: " + why);
  }
}

std::vector<BenchTiming> bench_models(const ModelBenchOptions& o) {
  check_model_bench(o);
  struct Entry {
    std::string mixer;
    std::string precision;
    LossImpl impl;
    int64_t chunk;  // fused only
    ModelConfig cfg;
    LanguageModel model{nullptr};
    std::unique_ptr<torch::optim::AdamW> opt;
    at::Tensor inp, tgt;
  };
  // Every (mixer, loss impl, chunk) is its own model and optimizer from the same seed: the
  // entries differ only in what is being compared.
  std::vector<std::unique_ptr<Entry>> entries;
  for (const auto& m : o.mixers) {
    for (LossImpl impl : o.loss_impls) {
      const std::vector<int64_t> chunks = impl == LossImpl::kFused ? o.loss_chunks : std::vector<int64_t>{0};
      for (int64_t chunk : chunks)
      for (const auto& precision : o.precisions) {
        auto e = std::make_unique<Entry>();
        e->mixer = m;
        e->precision = precision;
        e->impl = impl;
        e->chunk = chunk;
        e->cfg = o.model;
        e->cfg.mixer = m;
        e->cfg.validate();
        at::manual_seed(0);
        e->model = LanguageModel(e->cfg);
        e->model->train();
        const auto adamw = torch::optim::AdamWOptions(o.lr).weight_decay(o.weight_decay);
        if (e->precision == "bf16")  // as the trainer: the bf16 path's fused AdamW
          e->opt = std::make_unique<FusedAdamW>(e->model->parameters(), adamw);
        else
          e->opt = std::make_unique<torch::optim::AdamW>(e->model->parameters(), adamw);
        auto data = at::randint(0, e->cfg.vocab_size, {o.batch, e->cfg.max_len + 1}, at::kLong);
        e->inp = data.narrow(1, 0, e->cfg.max_len).contiguous();
        e->tgt = data.narrow(1, 1, e->cfg.max_len).contiguous();
        entries.push_back(std::move(e));
      }
    }
  }
  std::vector<std::function<void()>> steps;
  for (auto& ep : entries) {
    Entry* e = ep.get();
    steps.push_back([e] {
      for (auto& p : e->model->parameters()) p.mutable_grad() = at::Tensor();
      at::Tensor loss;
      {
        std::optional<AutocastScope> autocast;  // as the trainer: forward and loss only
        if (e->precision == "bf16") autocast.emplace(c10::DeviceType::CPU, at::kBFloat16);
        loss = e->impl == LossImpl::kFused ? lm_loss(e->model, e->inp, e->tgt, e->impl, e->chunk)
                                           : lm_loss(e->model, e->inp, e->tgt, e->impl);
      }
      loss.backward();
      {
        RECORD_USER_SCOPE("grassaudit::optimizer_step");  // a named range in --profile-ops
        e->opt->step();
      }
      (void)loss.item<float>();
    });
  }
  std::vector<Stats> stats;
  if (o.midway) {
    const int first = o.reps / 2;
    stats = run_interleaved(steps, o.warmup, first, o.unit_rate);
    for (size_t k = 0; k < entries.size(); ++k) o.midway(k, entries[k]->model);
    auto rest = run_interleaved(steps, 0, o.reps - first, o.unit_rate);
    for (size_t k = 0; k < entries.size(); ++k) {
      stats[k].ms.insert(stats[k].ms.end(), rest[k].ms.begin(), rest[k].ms.end());
      stats[k].unit.insert(stats[k].unit.end(), rest[k].unit.begin(), rest[k].unit.end());
      stats[k].peak = std::max(stats[k].peak, rest[k].peak);
    }
  } else {
    stats = run_interleaved(steps, o.warmup, o.reps, o.unit_rate);
  }
  std::vector<BenchTiming> out;
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = *entries[k];
    BenchTiming t;
    t.mixer = o.preset + ":" + e.mixer;
    t.loss_impl = loss_impl_name(e.impl);
    t.precision = e.precision;
    t.loss_chunk = e.chunk;
    t.batch = o.batch;
    t.seq_len = e.cfg.max_len;
    t.reps = o.reps;
    t.warmup = o.warmup;
    t.flops_per_step = training_step_flops(e.cfg, o.batch, t.seq_len);
    t.unit_gflops_beside = stats[k].unit;
    t.fraction_beside = median_fraction_beside(stats[k], t.flops_per_step);
    fill_timing(t, stats[k], o.batch * t.seq_len);
    if (o.profile_ops) {  // after the timings, so profiling cannot disturb them
      t.profile = profile_ops(steps[k]);
      t.has_profile = true;
    }
    out.push_back(t);
  }
  return out;
}

nlohmann::json to_json(const BenchTiming& t) {
  nlohmann::json j = throughput_json(t, "ms_per_step");
  j["mixer"] = t.mixer;
  j["seq_len"] = t.seq_len;
  j["peak_rss_mb"] = t.peak_rss_mb;
  j["reps"] = t.reps;
  j["warmup"] = t.warmup;
  if (!t.loss_impl.empty()) j["loss_impl"] = t.loss_impl;
  if (!t.precision.empty()) j["precision"] = t.precision;
  if (t.loss_chunk > 0) j["loss_chunk"] = t.loss_chunk;
  if (t.has_profile) j["op_profile"] = to_json(t.profile);
  if (t.flops_per_step > 0) {
    j["flops_per_step"] = t.flops_per_step;
    j["achieved_gflops"] = t.flops_per_step / (t.ms.median / 1e3) / 1e9;
  }
  if (!t.unit_gflops_beside.empty()) {
    j["gemm_gflops_beside_steps"] = t.unit_gflops_beside;
    j["fraction_of_gemm_beside_steps"] = t.fraction_beside;
  }
  return j;
}

}  // namespace grassaudit
