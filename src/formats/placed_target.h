#pragma once
// The device and dtype a target holds its model's tensors in, and the two overrides that report
// them: the same for every target that converts its own tensors (built-in models, TorchScript,
// graph files). The target's to_dtype, and its to_device where it moves, keep them current.
#include "audit/audit_target.h"

namespace grassaudit {

template <class Base>
class PlacedTarget : public Base {
 public:
  c10::Device device() const override { return device_; }
  at::ScalarType dtype() const override { return dtype_; }

 protected:
  at::ScalarType dtype_ = at::kFloat;
  c10::Device device_ = c10::Device(c10::kCPU);
};

}  // namespace grassaudit
