#pragma once
// Audit target for a user's TorchScript model: forward(int64 ids [B, L]) or
// forward(float32 [B, L, C]) returning a tensor [B, L, ...].
#include <memory>
#include <string>

#include "audit/audit_target.h"

namespace torch::jit {
struct Module;
}

namespace grassaudit {

class TorchScriptTarget : public AuditTarget {
 public:
  // InputError when the file is missing, not TorchScript, or has no forward.
  TorchScriptTarget(const std::string& path, const InputSpec& input);
  ~TorchScriptTarget() override;
  std::string describe() const override;
  InputSpec input() const override { return input_; }
  at::Tensor forward(const at::Tensor& x) override;
  void set_train(bool train) override;
  bool is_training() const override;
  bool to_dtype(at::ScalarType dtype, std::string* why) override;
  at::ScalarType dtype() const override { return dtype_; }
  // Feature models are differentiable in their inputs; token models have no embedding handle.
  bool supports_gradient() const override { return input_.kind == InputSpec::Kind::kFeatures; }
  std::string weights_hash() override;

 private:
  std::string path_;
  InputSpec input_;
  std::unique_ptr<torch::jit::Module> module_;
  at::ScalarType dtype_;
};

}  // namespace grassaudit
