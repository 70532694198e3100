#pragma once
// The model signature: how a model file's forward arguments and outputs map to the audit's
// time-indexed tensors, in one place (the prober, the property search and the suite all see the
// model only through it, via a ModelFileTarget: audit/model_file_target.h).
//
// Inputs. The audit draws ONE canonical input per pass: token ids [B, L] int64 (one tokens
// input), [B, L, n] int64 (n tokens inputs, slot j uniform over its own vocabulary V_j), or
// features [B, L, C] (the features inputs side by side, C = sum of their C_j). The signature
// turns it into the forward's arguments: each perturbed input gets its slot(s), with time moved
// to dimension K (--time-axis K: [B, C, T] for K = 2); `ones` / `zeros` inputs are held fixed,
// int64 [B, L] (an attention mask of ones). So every time-indexed input is perturbed together at
// each cut. Arguments with defaults may be left out; tokens and features inputs cannot be mixed.
//
// Outputs. forward may return a tensor or a tuple, list or dict (nested) of them. Each leaf has a
// path: "" (the output itself), [0], ["logits"], [1][0]. A floating-point leaf whose dimension K
// has length L is audited (time moved to 1, flattened to [B, L, -1]); any other leaf is listed as
// skipped, with why.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

#include "audit/audit_target.h"

namespace grassaudit {

// One --input value: "[NAME=]KIND", KIND = tokens:V | features:C | ones | zeros | const:VALUE.
// const:VALUE is an input that is not time-indexed (a sample rate): a 0-d tensor, int64 when
// VALUE is an integer, float64 otherwise (a graph format converts it to the type it declares).
struct InputBinding {
  enum class Kind { kTokens, kFeatures, kOnes, kZeros, kConst } kind = Kind::kTokens;
  std::string name;   // as given ("" = the next argument in order), then the argument it binds
  int64_t size = 0;   // V or C; 0 for ones / zeros / const
  std::string value;  // const: VALUE as given
  bool perturbed() const { return kind == Kind::kTokens || kind == Kind::kFeatures; }
  static InputBinding parse(const std::string& text);  // InputError on anything else
  std::string str() const;
};

// One argument of forward (self excluded).
struct ForwardArgument {
  std::string name, type;
  bool has_default = false;
};

// A leaf of the output structure at the audit's main length.
struct OutputLeaf {
  std::string path;
  std::vector<int64_t> shape;
  std::string skipped;  // why it is not audited; empty: audited
};

class ModelSignature {
 public:
  ModelSignature() = default;
  // Binds the --input values to the forward's arguments (in order, or by NAME). InputError, one
  // line listing the arguments and their types, on a wrong count or an unknown NAME; also on a
  // bad time axis, a model with no perturbed input, or tokens mixed with features.
  ModelSignature(const std::vector<ForwardArgument>& args, const std::vector<InputBinding>& inputs, int64_t time_axis,
                 double feature_scale);

  // The canonical input the prober draws (InputSpec: tokens with per-slot vocabularies, or features).
  const InputSpec& canonical() const { return canonical_; }
  int64_t time_axis() const { return time_axis_; }
  const std::vector<InputBinding>& bindings() const { return bindings_; }
  // x: the canonical input [B, L] / [B, L, n] int64 or [B, L, C] -> forward's arguments by name.
  std::vector<std::pair<std::string, c10::IValue>> arguments(const at::Tensor& x) const;
  // "ids=tokens:100, attention_mask=ones", for messages and the JSON.
  std::string describe_inputs() const;

  // Every leaf of `out` (depth first, in order), with its path; `L`: the length of the pass. A
  // one-tensor output is one audited leaf "" whatever its shape (the prober says what is wrong).
  std::vector<OutputLeaf> leaves(const c10::IValue& out, int64_t batch, int64_t L) const;
  // The leaf at `path` of `out`, time moved to dimension 1 ([B, L, ...] for the prober to check);
  // InputError naming the path when it is missing, not a tensor, or has no dimension K.
  at::Tensor leaf(const c10::IValue& out, const std::string& path) const;
  // The same for a model read from `file`: the InputError reads "<file>: <why>".
  at::Tensor file_leaf(const c10::IValue& out, const std::string& path, const std::string& file) const;

  // "forward(self, input_ids: Tensor, attention_mask: Tensor = ...)" for messages.
  static std::string describe_arguments(const std::vector<ForwardArgument>& args);

 private:
  std::vector<InputBinding> bindings_;  // in argument order, names resolved
  InputSpec canonical_;
  int64_t time_axis_ = 1;
};

// Checks a --output PATH: "" or a sequence of [INDEX] / ["KEY"]; InputError otherwise.
void validate_output_path(const std::string& path);

}  // namespace grassaudit
