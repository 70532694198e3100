#include "audit/model_file_target.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "audit/audit_prober.h"
#include "util/error.h"

// ModelFileTarget's own members, apart from the readers (src/formats): the Python
// package's live-module target shares them without compiling any reader.
namespace grassaudit {

namespace {

std::string value_str(const c10::IValue& v) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    return fmt::format("{} [{}]", c10::toString(t.scalar_type()), fmt::join(t.sizes().vec(), ", "));
  }
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return fmt::format("{:g}", v.toDouble());
  if (v.isBool()) return v.toBool() ? "True" : "False";
  if (v.isString()) return "'" + v.toStringRef() + "'";
  return v.tagKind();
}

}  // namespace

DeclaredRange DeclaredRange::intersect(const DeclaredRange& other, const std::string& what) const {
  DeclaredRange r{std::max(lo, other.lo), hi < 0 ? other.hi : (other.hi < 0 ? hi : std::min(hi, other.hi))};
  if (r.hi >= 0 && r.hi < r.lo)
    throw InputError(fmt::format("{}: the file declares {} and {} for it, which share no size", what, str(), other.str()));
  return r;
}

std::string DeclaredRange::str() const {
  if (is_static()) return std::to_string(lo);
  return fmt::format("[{}, {}]", lo, hi < 0 ? std::string("inf") : std::to_string(hi));
}

std::pair<std::string, std::string> StreamingOptions::parse_pair(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size() || text.find('=', eq + 1) != std::string::npos)
    throw InputError(fmt::format("--state '{}': expected IN=OUT (the state input and the output that returns its next "
                                 "value)",
                                 text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::string incremental_signature_missing(const ModelSignature& signature) {
  const auto& b = signature.bindings();
  if (b.size() != 1 || !b[0].perturbed() || signature.time_axis() != 1 || !signature.canonical().vocab_slots.empty())
    return fmt::format("--incremental takes one perturbed input with time at dimension 1 (step(x, state): x [B, n] ids "
                       "or [B, n, C] features), got {}",
                       signature.describe_inputs());
  return {};
}

std::string state_change(const std::string& name, const c10::IValue& old, const c10::IValue& now) {
  const bool same = old.isTensor() ? now.isTensor() && now.toTensor().sizes() == old.toTensor().sizes() &&
                                         now.toTensor().scalar_type() == old.toTensor().scalar_type() &&
                                         at::equal(now.toTensor(), old.toTensor())
                                   : !now.isTensor() && now == old;
  if (same) return "";
  return fmt::format("{} '{}' ({} -> {})", old.isTensor() ? "buffer" : "attribute", name, value_str(old),
                     old.isTensor() ? "other values" : value_str(now));
}

std::vector<OutputLeaf> ModelFileTarget::look_at_outputs(int64_t L, int64_t rows, at::ScalarType dtype,
                                                         const std::function<c10::IValue(const at::Tensor&)>& call) {
  at::NoGradGuard no_grad;
  const bool was_training = is_training();
  set_train(false);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(20261201);
  const at::Tensor x = random_inputs(input(), dtype, rows, L, gen);
  c10::IValue out;
  snapshot_state(/*restore=*/false);
  try {
    out = call(x);
  } catch (...) {
    end_state_tracking();
    set_train(was_training);
    throw;
  }
  end_state_tracking();
  set_train(was_training);
  return signature().leaves(out, rows, L);
}

}  // namespace grassaudit
