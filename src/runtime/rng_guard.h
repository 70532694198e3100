#pragma once
// Saves the global CPU generator's state and puts it back at scope exit, however the scope
// ends: building a model draws initial weights, and work that must not disturb a training
// run's random stream (loading a checkpoint, the audit gate, counting parameters) runs inside one.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include "util/non_copyable.h"

namespace grassaudit {

class CpuRngGuard : NonCopyable {
 public:
  CpuRngGuard() : state_(at::detail::getDefaultCPUGenerator().get_state()) {}
  ~CpuRngGuard() {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(state_);
  }

 private:
  at::Tensor state_;
};

}  // namespace grassaudit
