#pragma once
// Where a leak enters in a TorchScript module (audit/unit_probe.h): the submodules forward calls,
// by their attribute path ("blocks.0.mixer"), unit 0 the module's own code. forward's graph is
// copied and its module calls inlined outermost first, each call's path read from the GetAttr
// chain of its `self`; before it is inlined, every tensor-holding input and output of a call to a
// submodule's forward passes through a tap (the grassaudit::tap operator), which records the
// unit's leaves at its first call and replaces the fed inputs and the held outputs.
#include <ATen/core/ivalue.h>

#include <memory>
#include <vector>

#include "audit/unit_probe.h"

namespace torch::jit {
struct Module;
}

namespace grassaudit {

class TorchScriptUnits {
 public:
  // The units of `module`'s forward and its instrumented copy. InputError, one line, when the
  // graph cannot be instrumented.
  explicit TorchScriptUnits(torch::jit::Module& module);
  ~TorchScriptUnits();
  const std::vector<ProbeUnit>& units() const;
  // Whether this copy was made from `module` (a promoted or moved copy has graphs of its own).
  bool made_from(const torch::jit::Module& module) const;
  // One run of the instrumented forward with `stack` (self, then forward's arguments in schema
  // order); values sized units().size(), unit 0's entry left to the caller. InputError when a
  // fed or held unit is given other leaves than it has.
  c10::IValue run(std::vector<c10::IValue> stack, const UnitTensors& fed, const UnitTensors& held,
                  std::vector<UnitValues>& values);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grassaudit
