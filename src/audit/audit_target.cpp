#include "audit/audit_target.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>

#include "audit/model_signature.h"
#include "util/error.h"

namespace grassaudit {

InputSpec InputSpec::parse(const std::string& text) {
  // One perturbed input, no name: the model signature's parser (audit/model_signature.h) says
  // what a KIND is; here only tokens:V and features:C make sense.
  const InputBinding b = InputBinding::parse(text);
  if (!b.name.empty() || !b.perturbed())
    throw InputError(fmt::format("--input must be tokens:V or features:C, got '{}'", text));
  InputSpec s;
  s.kind = b.kind == InputBinding::Kind::kTokens ? Kind::kTokens : Kind::kFeatures;
  s.size = b.size;
  return s;
}

std::string InputSpec::str() const {
  if (kind == Kind::kTokens && !vocab_slots.empty()) return fmt::format("tokens:{}", fmt::join(vocab_slots, "+"));
  return fmt::format("{}:{}", kind == Kind::kTokens ? "tokens" : "features", size);
}

at::Tensor InputSpec::vocab_tensor() const {
  if (vocab_slots.empty()) return at::scalar_tensor(size, at::kLong);
  return at::tensor(vocab_slots, at::kLong);
}

bool AuditTarget::to_device(const c10::Device& device, std::string* why) {
  if (device.is_cpu()) return true;
  if (why) *why = fmt::format("{} runs on the CPU only", describe());
  return false;
}

c10::Device parse_audit_device(const std::string& name) {
  const InputError unknown(fmt::format("--device must be cpu, cuda or cuda:N, got '{}'", name));
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(name);
  } catch (const std::exception&) {
    throw unknown;
  }
  if (device.is_cpu()) return device;
  if (!device.is_cuda()) throw unknown;
  if (!torch::cuda::is_available())
    throw InputError(fmt::format("--device {}: CUDA is not available (this LibTorch build has no CUDA support or no GPU "
                                 "is visible); audit on the CPU (--device cpu)",
                                 name));
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  if (!device.has_index()) return c10::Device(c10::kCUDA, 0);
  if (device.index() >= count)
    throw InputError(fmt::format("--device {}: this machine has {} CUDA device(s)", name, count));
  return device;
}

void place_on_device(AuditTarget& target, const std::string& name) {
  const c10::Device device = parse_audit_device(name);
  std::string why;
  if (!target.to_device(device, &why))
    throw InputError(fmt::format("--device {}: {}", name, why.empty() ? "the target cannot run there" : why));
}

ExactCudaMath::ExactCudaMath()
    : cublas_(at::globalContext().allowTF32CuBLAS()), cudnn_(at::globalContext().allowTF32CuDNN()) {
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
}

ExactCudaMath::~ExactCudaMath() {
  at::globalContext().setAllowTF32CuBLAS(cublas_);
  at::globalContext().setAllowTF32CuDNN(cudnn_);
}

}  // namespace grassaudit
