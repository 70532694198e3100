#include "bench/op_profile.h"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace grassaudit {

std::string op_category(const std::string& name) {
  // Compute-bound: every GEMM, wherever it is called from.
  static const std::unordered_map<std::string, std::string> table{
      {"aten::mm", "gemm"},
      {"aten::addmm", "gemm"},
      {"aten::addmm_", "gemm"},
      {"aten::bmm", "gemm"},
      {"aten::baddbmm", "gemm"},
      // Conversions between float32 and bf16 (autocast's weight and activation copies).
      {"aten::_to_copy", "cast"},
      {"aten::to", "cast"},
      {"aten::native_layer_norm", "layer_norm"},
      {"aten::native_layer_norm_backward", "layer_norm"},
      {"NativeLayerNormBackward0", "layer_norm"},
      {"aten::gelu", "gelu"},
      {"aten::gelu_backward", "gelu"},
      {"GeluBackward0", "gelu"},
      {"aten::dropout", "dropout"},
      {"aten::bernoulli_", "dropout"},
      {"grassaudit::hashed_dropout", "dropout"},  // core/row_dropout.cpp (CPU float32/float64)
      {"grassaudit::hashed_dropout_backward", "dropout"},
      {"aten::_softmax", "attention_softmax"},  // the only softmax in the models (the loss uses log_softmax)
      {"aten::_softmax_backward_data", "attention_softmax"},
      {"SoftmaxBackward0", "attention_softmax"},
      {"grassaudit::fused_head_loss", "head_loss_elementwise"},
      {"aten::_log_softmax", "head_loss_elementwise"},
      {"aten::_log_softmax_backward_data", "head_loss_elementwise"},
      {"aten::nll_loss_forward", "head_loss_elementwise"},
      {"aten::nll_loss_backward", "head_loss_elementwise"},
      {"aten::embedding", "embedding"},
      {"aten::embedding_dense_backward", "embedding"},
      {"grassaudit::optimizer_step", "optimizer"},
  };
  auto it = table.find(name);
  return it == table.end() ? "" : it->second;
}

namespace {

// The legacy profiler records no dtypes: a RecordFunction observer notes each GEMM's input dtype,
// per thread in call order, and the profile's GEMM ranges (the same calls, in the same order on the
// same thread) take their dtype from it: "gemm_bf16", "gemm_fp32", ...
struct GemmDtypes {
  std::mutex mu;
  std::map<uint64_t, std::deque<std::string>> by_thread;
};
GemmDtypes& gemm_dtypes() {
  static GemmDtypes g;
  return g;
}

std::string dtype_suffix(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return "bf16";
    case at::kFloat: return "fp32";
    case at::kDouble: return "fp64";
    case at::kHalf: return "fp16";
    default: return "other";
  }
}

std::unique_ptr<at::ObserverContext> note_gemm_dtype(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (name == nullptr || op_category(name) != "gemm") return nullptr;
  std::string dtype = "other";
  for (const auto& v : fn.inputs()) {
    if (v.isTensor()) {
      dtype = dtype_suffix(v.toTensor().scalar_type());
      break;
    }
  }
  auto& g = gemm_dtypes();
  std::lock_guard<std::mutex> lock(g.mu);
  g.by_thread[fn.threadId()].push_back(dtype);
  return nullptr;
}

}  // namespace

OpProfile profile_ops(const std::function<void()>& step) {
  namespace prof = torch::autograd::profiler;
  prof::thread_event_lists lists;
  {
    std::lock_guard<std::mutex> lock(gemm_dtypes().mu);
    gemm_dtypes().by_thread.clear();
  }
  const auto t0 = std::chrono::steady_clock::now();
  {
    prof::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
    const auto observer = at::addGlobalCallback(at::RecordFunctionCallback(note_gemm_dtype).needsInputs(true));
    try {
      step();
    } catch (...) {
      at::removeCallback(observer);
      prof::disableProfilerLegacy();
      throw;
    }
    at::removeCallback(observer);
    lists = prof::disableProfilerLegacy();
  }
  OpProfile out;
  out.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::unordered_map<std::string, OpProfile::Op> by_name;
  for (const auto& events : lists) {
    // Ranges nest per thread: a stack of open pushes, each with the time of its children.
    struct Open {
      const prof::LegacyEvent* push;
      double child_us;
      std::string gemm_dtype;  // a GEMM's input dtype ("" for other ops)
    };
    std::vector<Open> stack;
    for (const auto& e : events) {
      if (e.kind() == prof::EventKind::PushRange) {
        std::string dtype;
        if (op_category(e.name()) == "gemm") {
          auto& queue = gemm_dtypes().by_thread[e.threadId()];
          if (!queue.empty()) {
            dtype = queue.front();
            queue.pop_front();
          }
        }
        stack.push_back({&e, 0.0, dtype});
      } else if (e.kind() == prof::EventKind::PopRange && !stack.empty()) {
        const Open open = stack.back();
        stack.pop_back();
        const double total_us = open.push->cpuElapsedUs(e);
        const double self_us = std::max(0.0, total_us - open.child_us);
        if (stack.empty()) out.recorded_ms += total_us / 1e3;
        else stack.back().child_us += total_us;
        const std::string name = open.push->name();
        auto& op = by_name[name];
        op.name = name;
        op.self_ms += self_us / 1e3;
        op.calls += 1;
        std::string category = op_category(name);
        if (category == "gemm" && !open.gemm_dtype.empty()) category += "_" + open.gemm_dtype;
        for (auto it = stack.rbegin(); category.empty() && it != stack.rend(); ++it) {
          category = op_category(it->push->name());
          if (category == "gemm" && !it->gemm_dtype.empty()) category += "_" + it->gemm_dtype;
        }
        out.category_ms[category.empty() ? "other" : category] += self_us / 1e3;
      }
    }
  }
  for (auto& kv : by_name) out.ops.push_back(kv.second);
  std::sort(out.ops.begin(), out.ops.end(), [](const auto& a, const auto& b) { return a.self_ms > b.self_ms; });
  return out;
}

nlohmann::json to_json(const OpProfile& p, size_t top) {
  const double total = p.recorded_ms > 0 ? p.recorded_ms : 1.0;
  nlohmann::json cats = nlohmann::json::object();
  for (const auto& [name, ms] : p.category_ms) cats[name] = {{"ms", ms}, {"share", ms / total}};
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < p.ops.size() && i < top; ++i)
    ops.push_back({{"name", p.ops[i].name},
                   {"self_ms", p.ops[i].self_ms},
                   {"share", p.ops[i].self_ms / total},
                   {"calls", p.ops[i].calls}});
  return {{"wall_ms", p.wall_ms}, {"recorded_ms", p.recorded_ms}, {"categories", cats}, {"top_ops", ops}};
}

}  // namespace grassaudit
