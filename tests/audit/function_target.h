#pragma once
// A features-input audit target defined by a function, for tests of the audit itself.
#include <ATen/ATen.h>

#include <functional>
#include <string>

#include "audit/audit_target.h"
#include "audit/causality_audit.h"

namespace grassaudit::testing {

class FunctionTarget : public AuditTarget {
 public:
  using Fn = std::function<at::Tensor(const at::Tensor& x, bool training)>;
  FunctionTarget(std::string name, int64_t channels, Fn fn, bool allow_double = true)
      : name_(std::move(name)), channels_(channels), fn_(std::move(fn)), allow_double_(allow_double) {}
  std::string describe() const override { return name_; }
  InputSpec input() const override {
    InputSpec s;
    s.kind = InputSpec::Kind::kFeatures;
    s.size = channels_;
    return s;
  }
  at::Tensor forward(const at::Tensor& x) override { return fn_(x, training_); }
  void set_train(bool t) override { training_ = t; }
  bool is_training() const override { return training_; }
  bool to_dtype(at::ScalarType d, std::string* why) override {
    if (d == at::kDouble && !allow_double_) {
      if (why) *why = "this test target refuses float64";
      return false;
    }
    dtype_ = d;
    return true;
  }
  at::ScalarType dtype() const override { return dtype_; }
  bool supports_gradient() const override { return true; }

 private:
  std::string name_;
  int64_t channels_;
  Fn fn_;
  bool allow_double_;
  bool training_ = false;
  at::ScalarType dtype_ = at::kFloat;
};

// The options most function-target tests audit with: length L, `trials` random inputs.
inline AuditOptions audit_options(int64_t L, int64_t trials) {
  AuditOptions o;
  o.seq_len = L;
  o.trials = trials;
  return o;
}

}  // namespace grassaudit::testing
