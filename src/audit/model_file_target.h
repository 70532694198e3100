#pragma once
// What every model read from a file is to the audit: a ModelFileTarget, seen through its model
// signature (audit/model_signature.h). The readers (src/formats/) derive their targets from it
// and the opener (formats/model_file.h) returns one; the engine (the checks, the output-leaf
// audit, the suite runner) sees only this class and never names a format.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

#include "audit/audit_target.h"
#include "audit/model_signature.h"

namespace grassaudit {

// The sizes a file declares one dimension runs at: [lo, hi], hi -1 when unbounded; lo == hi when
// the dimension was exported static. A torch.export archive declares them (its range
// constraints, and static sizes); the audit stays inside them.
struct DeclaredRange {
  int64_t lo = 1, hi = -1;
  bool is_static() const { return hi == lo; }
  bool contains(int64_t n) const { return n >= lo && (hi < 0 || n <= hi); }
  bool any() const { return lo <= 1 && hi < 0; }
  // Both ranges at once (two inputs sharing a dimension); an empty intersection is an InputError.
  DeclaredRange intersect(const DeclaredRange& other, const std::string& what) const;
  std::string str() const;  // "[4, 128]", "[2, inf]", "16"
};

// A model read from a file, seen through its model signature (audit/model_signature.h): the
// arguments bound to --input values, time at --time-axis, one output leaf selected at a time.
class ModelFileTarget : public AuditTarget {
 public:
  // "torchscript" | "torch.export": the JSON's `format`.
  virtual const char* format() const = 0;
  virtual const ModelSignature& signature() const = 0;
  // The perturbed input as the signature binds it; features models are differentiable in their
  // inputs, token models have no embedding handle for the gradient method.
  InputSpec input() const override { return signature().canonical(); }
  bool supports_gradient() const override { return input().kind == InputSpec::Kind::kFeatures; }
  // The output leaves at length L (one eval-mode pass of random rows, no gradients).
  virtual std::vector<OutputLeaf> output_leaves(int64_t L) = 0;
  // The leaf forward() returns from now on ("" = a one-tensor output).
  virtual void select_output(const std::string& path) = 0;
  virtual const std::string& selected_output() const = 0;
  // The sequence lengths and batch sizes the file runs at (any, unless it declares them). The
  // target runs any batch size the audit asks for inside the declared ones (calls of at most `hi`
  // rows, a short call padded to `lo`); the lengths are the audit's to keep (file_audit_options).
  virtual DeclaredRange seq_len_range() const { return {}; }
  virtual DeclaredRange batch_range() const { return {}; }
  // Notes every audit of this file carries: what the file fixes that the audit would otherwise
  // vary (its batch size, its train mode).
  virtual std::vector<std::string> notes() const { return {}; }

 protected:
  // output_leaves for every format: one pass of `rows` random rows at length L through `call`
  // (the format's forward, before a leaf is selected), eval mode, no gradients; the model's state
  // and train mode come back as they were (a look at the outputs must not advance the model).
  std::vector<OutputLeaf> look_at_outputs(int64_t L, int64_t rows, at::ScalarType dtype,
                                          const std::function<c10::IValue(const at::Tensor&)>& call);
};

// How a model's kept state moved during one call, in the words of the state refusal:
// "buffer 'total' (Float [4] -> other values)", "attribute 'calls' (0 -> 1)"; "" when `now`
// equals `old` (a tensor: same dtype, sizes and values).
std::string state_change(const std::string& name, const c10::IValue& old, const c10::IValue& now);

// What the incremental path needs of a model's signature: one perturbed input with time at
// dimension 1 (step(x, state): x [B, n] ids or [B, n, C] features); "" when it has that, else the
// one line saying what it has instead.
std::string incremental_signature_missing(const ModelSignature& signature);

// --state IN=OUT pairs and --state-init FILE: a streaming ONNX model's state inputs, the outputs
// that return their next values, and their initial values (zeros when no file).
struct StreamingOptions {
  std::vector<std::pair<std::string, std::string>> state;  // input name, output name
  std::string state_init;                                  // see formats/onnx/streaming_program.h
  bool active() const { return !state.empty(); }
  // "IN=OUT" -> the pair; InputError naming the text otherwise.
  static std::pair<std::string, std::string> parse_pair(const std::string& text);
};

}  // namespace grassaudit
