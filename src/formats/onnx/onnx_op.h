#pragma once
// One ONNX node as an op implementation sees it: its inputs as ATen tensors, its attributes, the
// opset the model imports, and whether the run is the audit's float64 re-run. An op is a plain
// function from this context to the node's outputs; each onnx_ops_*.cpp file adds its family of
// ops to the table (onnx_op_table.cpp puts them together), so a new op is one function and one
// line in its family's list.
//
// Semantics follow the ONNX operator spec (onnx/defs, docs/Operators.md) for every opset from 13
// to the newest this libonnx knows; where an opset changed an op (an attribute that became an
// input), the op reads both forms.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace grassaudit::onnx_rt {

// A value between nodes: a tensor, or a sequence of tensors (ONNX's sequence type: what a scripted
// loop that appends to a list exports to). A sequence is shared, never changed in place: the
// sequence ops make a new one.
struct Value {
  at::Tensor tensor;
  std::shared_ptr<const std::vector<at::Tensor>> sequence;  // set: a sequence (possibly empty)
  // A sequence's element type when it has no element to say it (SequenceEmpty's dtype).
  std::optional<at::ScalarType> elem_type;
  Value() = default;
  Value(at::Tensor t) : tensor(std::move(t)) {}  // NOLINT: a tensor is a value
  static Value of_sequence(std::vector<at::Tensor> items, std::optional<at::ScalarType> elem_type = std::nullopt);
  bool is_sequence() const { return sequence != nullptr; }
  bool defined() const { return tensor.defined() || is_sequence(); }
};

class OpContext {
 public:
  // Runs the graph attribute `attr` (If's branches, Loop's and Scan's bodies) on `inputs` (the
  // sub-graph's inputs in order); names of the enclosing graphs are visible inside, as ONNX says.
  using SubgraphRunner =
      std::function<std::vector<Value>(const onnx::AttributeProto& attr, const std::vector<Value>& inputs)>;

  // `max_elements`: OnnxProgram::Limits's (the default is the CLI's, for an op run on its own).
  OpContext(const onnx::NodeProto& node, int64_t opset, std::vector<at::Tensor> inputs, bool float64,
            SubgraphRunner run_subgraph, int64_t max_elements = int64_t{1} << 31);
  // A node that takes sequences (ValueOpFn): its inputs as values; inputs() holds their tensors
  // (undefined for a sequence).
  OpContext(const onnx::NodeProto& node, int64_t opset, std::vector<Value> values, bool float64,
            SubgraphRunner run_subgraph, int64_t max_elements = int64_t{1} << 31);

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op_type() const;
  int64_t opset() const { return opset_; }
  // The inputs in order; an undefined tensor for an omitted optional input ("" name, or fewer
  // inputs than the op's list).
  const std::vector<at::Tensor>& inputs() const { return inputs_; }
  size_t num_inputs() const { return inputs_.size(); }
  // Input i, or an undefined tensor when i is past the end or omitted.
  at::Tensor input(size_t i) const { return i < inputs_.size() ? inputs_[i] : at::Tensor(); }
  // Input i, which the op requires: fail() names it when absent.
  const at::Tensor& required(size_t i) const;
  // Whether input i's buffer belongs to this op alone: the interpreter handed over its last
  // handle (this node is the input's last reader), no view, alias or other slot shares its
  // storage, its layout is dense and it needs no gradient. The op may then write its output into
  // it (an elementwise op of the input's shape and type) instead of allocating a fresh buffer.
  bool overwritable(size_t i) const;
  // How many outputs the node names (trailing optional outputs may be absent).
  int num_outputs() const;
  // The float type a float32 the op creates from attributes (Cast to FLOAT, a Constant, a
  // ConstantOfShape value, a float Range) has in this run: float64 in the audit's float64 re-run.
  bool float64() const { return float64_; }
  at::ScalarType float_type() const;
  // dtype promoted the same way: kFloat reads as kDouble in a float64 run.
  at::ScalarType promote(at::ScalarType t) const;

  // Attributes (defaults when absent; fail() when present with another type).
  bool has(const char* name) const;
  int64_t attr_int(const char* name, int64_t def) const;
  float attr_float(const char* name, float def) const;
  std::string attr_string(const char* name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const char* name) const;  // empty when absent
  std::vector<float> attr_floats(const char* name) const;
  std::vector<std::string> attr_strings(const char* name) const;
  at::Tensor attr_tensor(const char* name) const;  // undefined when absent; float32 promoted
  const onnx::AttributeProto* attr(const char* name) const;  // nullptr when absent
  // Runs the sub-graph held by attribute `name` (required); fail() when it returns a sequence.
  std::vector<at::Tensor> run_subgraph(const char* name, const std::vector<at::Tensor>& inputs) const;
  // The same for values (a Loop carrying a sequence).
  std::vector<Value> run_subgraph_values(const char* name, const std::vector<Value>& inputs) const;
  // Input i as a value (a ValueOpFn's node); an undefined value when absent.
  const Value& value(size_t i) const;
  size_t num_values() const { return values_.size(); }
  // Input i, which must be a sequence / a tensor: fail() names it otherwise.
  const Value& sequence(size_t i) const;

  // InputError, one line naming the node (its name or index, op type) and `why`.
  [[noreturn]] void fail(const std::string& why) const;
  // The most elements a tensor the node makes may hold (OnnxProgram::Limits).
  int64_t max_elements() const { return max_elements_; }
  // fail() unless a tensor of `shape` is within max_elements() (a 0 counted as 1, so huge sizes
  // beside a 0 are refused too) with no negative size; `what` names the tensor.
  void check_size(at::IntArrayRef shape, const char* what) const;

 private:
  const onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<at::Tensor> inputs_;
  std::vector<Value> values_;
  bool float64_;
  SubgraphRunner run_subgraph_;
  int64_t max_elements_;
};

using OpFn = std::vector<at::Tensor> (*)(OpContext&);
using OpTable = std::unordered_map<std::string, OpFn>;
// An op that takes or makes sequences (OpContext::value): the sequence ops, and the control ops
// whose bodies may carry them. Looked up before the tensor table.
using ValueOpFn = std::vector<Value> (*)(OpContext&);
// The operators' shorthand: their outputs as tensors or values, one tensor as an output list.
using Ts = std::vector<at::Tensor>;
using Vs = std::vector<Value>;
inline Ts one(at::Tensor t) { return {std::move(t)}; }
using ValueOpTable = std::unordered_map<std::string, ValueOpFn>;

// The families (one file each); the table of every op the interpreter runs (default domain "").
void add_elementwise_ops(OpTable& table);  // onnx_ops_elementwise.cpp: math, logic, activations
void add_tensor_ops(OpTable& table);       // onnx_ops_tensor.cpp: shape, gather/scatter, slicing, casts
void add_nn_ops(OpTable& table);           // onnx_ops_nn.cpp: MatMul, Gemm, Conv, norms, softmax, reductions
void add_rnn_ops(OpTable& table);          // onnx_ops_rnn.cpp: LSTM, GRU, RNN
void add_control_ops(OpTable& table);      // onnx_ops_control.cpp: If, Loop, Scan
const OpTable& op_table();
void add_sequence_ops(ValueOpTable& table);  // onnx_ops_sequence.cpp: the sequence type's ops, Identity on either
void add_control_value_ops(ValueOpTable& table);  // onnx_ops_control.cpp: If and Loop over values
const ValueOpTable& value_op_table();
// Whether the reader runs op `type` (either table).
bool runs_op(const std::string& type);
// MatMul(A, B) then Add(product, bias) as one node, the interpreter's fusion (onnx_program.cpp):
// inputs A, B, bias; output the Add's.
OpFn matmul_add_fn();

// Helpers the families share.
// The ints of a 1-D (or 0-D) integer tensor input (shapes, axes, pads).
std::vector<int64_t> to_ints(const at::Tensor& t);
// An axis in [-rank, rank) made non-negative; fail() when out of range.
int64_t norm_axis(const OpContext& ctx, int64_t axis, int64_t rank);
// ONNX's TensorProto.DataType code as an ATen type; fail() for types LibTorch lacks (uint16/32/64,
// string, complex).
at::ScalarType onnx_dtype(const OpContext& ctx, int64_t code);
// The elements of `shape` with each 0 counted as 1, or -1 when that is over `limit` or a size is
// negative (computed without overflow).
int64_t span_within(at::IntArrayRef shape, int64_t limit);
// The numpy broadcast of `shapes`, or nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<at::IntArrayRef>& shapes);

}  // namespace grassaudit::onnx_rt
