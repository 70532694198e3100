#pragma once
// What each format's reader finds out about a file's inputs when no --input is given (the
// graph formats: formats/graph/graph_input_inference.h; TorchScript:
// formats/torchscript/torchscript_input_inference.h), and the one place that turns the findings
// into bindings or into the one line that says what to pass.
#include <optional>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

#include "audit/model_signature.h"

namespace grassaudit {

// One input of the file, as far as the file describes it.
struct InputFinding {
  std::string name;
  std::string described;                // "float32 [?, ?, 4]", "Tensor; dtype and shape not declared"
  std::optional<InputBinding> binding;  // named; nullopt: the file does not say enough
  std::string pass;                     // what to do instead: "pass --input x=features:C"
  bool left_out = false;                // an argument with a default, left to it

  // Binds this input, by its name, as `kind` (V or C in `size`; 0 for ones).
  void bind(InputBinding::Kind kind, int64_t size) {
    InputBinding b;
    b.kind = kind;
    b.name = name;
    b.size = size;
    binding = b;
  }
};

// "float32", "int64", "bool": the names PyTorch and ONNX users read.
std::string element_type_name(c10::ScalarType t);
// An attention-mask-like name: it contains "mask" (any case).
bool looks_like_mask(const std::string& name);

// The bindings, in order (left-out arguments skipped). InputError, one line, when any input is
// unbound: "<label>: cannot infer the inputs: x (float32 [?, ?, ?]: pass --input x=features:C);
// pass one --input per input", every input named with what is known of it.
std::vector<InputBinding> conclude_inputs(const std::string& label, const std::vector<InputFinding>& findings);

// "input_ids=tokens:50257, attention_mask=ones".
std::string describe_bindings(const std::vector<InputBinding>& bindings);
// "tokens:50257": a binding's KIND without its name.
std::string binding_kind(const InputBinding& b);

}  // namespace grassaudit
