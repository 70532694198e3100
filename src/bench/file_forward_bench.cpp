#include "bench/file_forward_bench.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include <nlohmann/json.hpp>

#include "formats/model_file.h"
#include "runtime/runtime.h"
#include "util/error.h"

namespace grassaudit {

std::vector<FileForwardTiming> bench_file_forward(const FileForwardOptions& o) {
  // files: F paths; every one gets x [B, L] ids or [B, L, C] features, drawn once.
  if (o.files.empty()) throw InputError("--files needs at least one model file");
  if (o.batch < 1 || o.seq_len < 1) throw InputError("--batch and --seq-len must be >= 1");
  if (o.reps < 1) throw InputError("--reps must be >= 1");
  std::vector<std::unique_ptr<ModelFileTarget>> targets;
  for (const auto& f : o.files) {
    targets.push_back(open_model_file(f, o.inputs));
    targets.back()->set_train(false);
  }
  const InputSpec spec = targets.front()->input();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1234);
  const at::Tensor x = spec.kind == InputSpec::Kind::kTokens
                           ? at::randint(spec.size, {o.batch, o.seq_len}, gen, at::kLong)
                           : at::randn({o.batch, o.seq_len, spec.size}, gen, at::kFloat);
  at::NoGradGuard no_grad;
  std::vector<std::vector<double>> ms(targets.size());
  std::vector<std::optional<double>> abs_diff(targets.size()), rel_diff(targets.size());
  at::Tensor y0;
  using clock = std::chrono::steady_clock;
  for (int r = 0; r < o.warmup + o.reps; ++r) {
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto t0 = clock::now();
      const at::Tensor y = targets[i]->forward(x);
      const double t = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      if (!y.defined()) throw InputError(o.files[i] + ": the forward returned nothing");
      if (r >= o.warmup) ms[i].push_back(t);
      if (r == 0) {
        if (i == 0) y0 = y.to(at::kDouble);
        if (y.sizes() == y0.sizes()) {
          const double scale = y0.abs().max().item<double>();
          abs_diff[i] = (y.to(at::kDouble) - y0).abs().max().item<double>();
          if (scale > 0) rel_diff[i] = *abs_diff[i] / scale;
        }
      }
    }
  }
  std::vector<FileForwardTiming> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    FileForwardTiming t;
    t.file = o.files[i];
    t.format = targets[i]->format();
    t.batch = o.batch;
    t.seq_len = o.seq_len;
    set_throughput(t, ms[i], static_cast<double>(o.batch * o.seq_len));
    t.max_abs_diff = abs_diff[i];
    t.max_rel_diff = rel_diff[i];
    out.push_back(t);
  }
  return out;
}

nlohmann::json to_json(const FileForwardTiming& t) {
  nlohmann::json j = throughput_json(t, "ms_per_forward");
  j["file"] = t.file;
  j["format"] = t.format;
  j["seq_len"] = t.seq_len;
  j["max_abs_diff_vs_first"] = t.max_abs_diff ? nlohmann::json(*t.max_abs_diff) : nlohmann::json();
  j["max_rel_diff_vs_first"] = t.max_rel_diff ? nlohmann::json(*t.max_rel_diff) : nlohmann::json();
  return j;
}

}  // namespace grassaudit
