#pragma once
// Tensors out of a torch.save file (the zip format of PyTorch 1.6+), read with an allowlist:
// the pickle may build tensors and storages (torch._utils._rebuild_tensor_v2,
// _rebuild_parameter, _rebuild_parameter_with_state, torch.*Storage), dicts (also
// collections.OrderedDict), lists, tuples and plain values, which is what
// torch.load(weights_only=True) accepts for weights. Any other global is refused by name, never
// run: a model file is untrusted input.
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace grassaudit {

// bytes: a torch.save file holding a dict of name -> tensor (a state_dict, torch.export's
// constants); `what` names it in errors. InputError (one line) on anything else.
std::vector<std::pair<std::string, at::Tensor>> read_saved_tensor_dict(const std::string& bytes, const std::string& what);

// bytes: a torch.save file holding one tensor.
at::Tensor read_saved_tensor(const std::string& bytes, const std::string& what);

}  // namespace grassaudit
