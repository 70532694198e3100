#pragma once
// Throughput benchmarks behind `grassaudit bench`:
//   layer: one mixer layer, forward + backward of a scalar loss (mean of squares, as
//          reference/python/bench_mha.py), float32, input requires grad, after warm-up.
//   model: one full training step of a whole language model (forward, next-token
//          cross-entropy by the chosen LossImpl, backward, AdamW step), as
//          reference/python/bench_train_step.py.
// Several mixers (model mode: mixers x loss impls x fused chunk sizes) can be timed in one run;
// their reps are interleaved (rep i of every entry before rep i + 1 of any), so ratios between
// them are side by side on a shared machine.
// No LibTorch headers here: the CLI includes this without pulling torch/torch.h.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "bench/bench_record.h"
#include "bench/op_profile.h"
#include "core/language_model.h"
#include "core/lm_loss.h"
#include "core/model_config.h"

namespace grassaudit {

// Throughput per training step: batch * seq_len tokens.
struct BenchTiming : Throughput {
  std::string mixer;           // registry name (layer) or "PRESET:mixer" (model)
  int64_t seq_len = 0;
  double peak_rss_mb = 0;      // VmHWM over this mixer's timed reps (see peak_rss_mb())
  double flops_per_step = 0;   // model benchmark: analytic training-step FLOPs (0 = not counted)
  int reps = 0, warmup = 0;
  std::string loss_impl;       // model benchmark: "fused" | "materialized" ("" = layer benchmark)
  std::string precision;       // model benchmark: "fp32" | "bf16" (CPU bf16 autocast around forward + loss)
  int64_t loss_chunk = 0;      // model benchmark, fused: tokens per head chunk
  bool has_profile = false;    // --profile-ops: one extra step under the op profiler
  OpProfile profile;
  // Model benchmark: the machine's fastest GEMM rate (GFLOP/s, the larger of sgemm and bf16 GEMM
  // where bf16 is timed) measured just before each timed step, and the median over the reps of
  // each step's achieved rate over the rate measured beside it: a ratio whose two figures share
  // the machine's state of the moment (these machines' speed drifts between minutes).
  std::vector<double> unit_gflops_beside;
  double fraction_beside = 0;
};

struct LayerBenchOptions {
  std::vector<std::string> mixers;  // timed interleaved
  std::vector<int64_t> seq_lens{128};  // every (mixer, L) pair is one interleaved entry
  int64_t batch = 32;
  int64_t tokens = 0;                  // > 0: batch = tokens / L for each L (fixed tokens per step)
  ModelConfig model;                // d_model, rank, heads, offsets, offset_mode, eps, dropout
  int reps = 10, warmup = 2;
};

struct ModelBenchOptions {
  std::string preset;
  std::vector<std::string> mixers;
  ModelConfig model;                // from the preset (+ flag overrides); mixer set per entry
  int64_t batch = 32;
  double lr = 3e-4, weight_decay = 0.01;
  int reps = 3, warmup = 1;
  std::vector<LossImpl> loss_impls{LossImpl::kFused};  // every mixer is timed with each
  std::vector<int64_t> loss_chunks{kDefaultHeadChunk};  // fused: every chunk size is an entry
  // Every entry is timed in each: "fp32", "bf16" (the training forward and loss under CPU bf16
  // autocast, as train --precision bf16; weights, gradients and AdamW in float32).
  std::vector<std::string> precisions{"fp32"};
  bool profile_ops = false;  // after the timed reps, profile one more step of every entry
  // Optional: the fastest GEMM rate (GFLOP/s), measured before each timed step (BenchTiming's
  // unit_gflops_beside, fraction_beside).
  std::function<double()> unit_rate;
  // Optional: called once per model halfway through the timed reps (after reps / 2 steps of
  // every model), with the model being benchmarked. --audit-cost times a gate audit here, so
  // the audit and the steps it is compared with share the machine's state of the moment.
  std::function<void(size_t index, LanguageModel& model)> midway;
};

// The single benchmarked layer's config: "all" -> every offset, "per-layer" -> offsets[0] only
// (layer 0 of a per-layer schedule). max_len = seq_len. Validated (InputError on bad values).
ModelConfig layer_bench_config(const LayerBenchOptions& o, const std::string& mixer, int64_t seq_len);
// The batch used at sequence length L (InputError when --tokens is below L).
int64_t layer_bench_batch(const LayerBenchOptions& o, int64_t seq_len);

std::vector<BenchTiming> bench_layers(const LayerBenchOptions& o);
// Every value of a model benchmark (InputError on the first bad one); bench_models calls it,
// the CLI calls it before printing anything.
void check_model_bench(const ModelBenchOptions& o);
std::vector<BenchTiming> bench_models(const ModelBenchOptions& o);

// Analytic FLOPs of one training step (3 x forward GEMM/attention FLOPs; elementwise work not
// counted) of a language model with this config, batch B, sequence length L.
double training_step_flops(const ModelConfig& cfg, int64_t B, int64_t L);

// Peak resident set size of this process in MB: VmHWM from /proc/self/status (getrusage as a
// fallback). reset_peak_rss() lowers it to the current RSS (/proc/self/clear_refs, "5") so a
// later read covers only what ran since; returns false where the kernel refuses.
double peak_rss_mb();
bool reset_peak_rss();

nlohmann::json to_json(const BenchTiming& t);

}  // namespace grassaudit
