#include "bench/decode_bench.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "core/language_model.h"
#include "runtime/runtime.h"
#include "core/token_mixer.h"
#include "util/error.h"

namespace grassaudit {

void check_decode_bench(const DecodeBenchOptions& o) {
  if (o.mixers.empty()) throw InputError("--decode needs at least one --mixer");
  if (o.contexts.empty()) throw InputError("--contexts is empty");
  for (int64_t c : o.contexts)
    if (c < 1) throw InputError(fmt::format("--contexts entries must be >= 1, got {}", c));
  if (o.steps < 1) throw InputError(fmt::format("--decode-steps must be >= 1, got {}", o.steps));
  if (o.batch < 1) throw InputError(fmt::format("--batch must be >= 1, got {}", o.batch));
  if (o.reps < 1) throw InputError(fmt::format("--reps must be >= 1, got {}", o.reps));
  for (const auto& m : o.mixers) {
    ModelConfig c = o.model;
    c.mixer = m;
    c.max_len = *std::max_element(o.contexts.begin(), o.contexts.end()) + o.steps;
    c.validate();
    // One layer's mixer says whether the model has an incremental path (not a whole model).
    const auto mixer = MixerRegistry::instance().create(c, 0);
    if (!mixer->has_incremental()) throw InputError(fmt::format("--decode --mixer {}: {}", m, mixer->incremental_unsupported()));
  }
}

std::vector<DecodeTiming> bench_decode(const DecodeBenchOptions& o) {
  check_decode_bench(o);
  at::NoGradGuard no_grad;
  const int64_t max_ctx = *std::max_element(o.contexts.begin(), o.contexts.end());
  std::vector<LanguageModel> models;
  for (const auto& m : o.mixers) {
    ModelConfig c = o.model;
    c.mixer = m;
    c.max_len = max_ctx + o.steps;
    at::manual_seed(1234);
    models.emplace_back(c);
    models.back()->eval();
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(4321);
  const int64_t V = o.model.vocab_size;
  const auto prompt = at::randint(0, V, {o.batch, max_ctx}, gen, at::TensorOptions().dtype(at::kLong));
  const auto next = at::randint(0, V, {o.batch, o.steps}, gen, at::TensorOptions().dtype(at::kLong));
  // samples[(mixer, context)]: ms per token of each timed rep; bytes: the state after it.
  std::map<std::pair<size_t, int64_t>, std::vector<double>> samples;
  std::map<std::pair<size_t, int64_t>, int64_t> bytes;
  for (int rep = 0; rep < o.warmup + o.reps; ++rep)
    for (int64_t ctx : o.contexts)
      for (size_t i = 0; i < models.size(); ++i) {  // interleaved: rep r of every entry before r + 1
        auto& model = models[i];
        LmState state = model->init_state();
        model->step(prompt.narrow(1, 0, ctx), state);  // prefill (untimed)
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t s = 0; s < o.steps; ++s) model->step(next.narrow(1, s, 1), state);  // logits [B, 1, V]
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (rep < o.warmup) continue;
        samples[{i, ctx}].push_back(ms / static_cast<double>(o.steps));
        int64_t b = 0;
        for (const auto& layer : state.layers)
          for (const auto& t : layer.tensors) b += t.numel() * static_cast<int64_t>(t.element_size());
        bytes[{i, ctx}] = b;
      }
  std::vector<DecodeTiming> out;
  for (size_t i = 0; i < models.size(); ++i)
    for (int64_t ctx : o.contexts) {
      DecodeTiming t;
      t.mixer = o.mixers[i];
      t.context = ctx;
      t.steps = o.steps;
      t.batch = o.batch;
      set_throughput(t, samples[{i, ctx}], static_cast<double>(o.batch));
      t.state_bytes = bytes[{i, ctx}];
      out.push_back(t);
    }
  return out;
}

nlohmann::json to_json(const DecodeTiming& t) {
  nlohmann::json j = throughput_json(t, "ms_per_token");
  j["mixer"] = t.mixer;
  j["context"] = t.context;
  j["steps"] = t.steps;
  j["state_bytes"] = t.state_bytes;
  return j;
}

}  // namespace grassaudit
