#include "formats/onnx/onnx_op.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "formats/onnx/onnx_tensor.h"
#include "util/error.h"

namespace grassaudit::onnx_rt {

OpContext::OpContext(const onnx::NodeProto& node, int64_t opset, std::vector<at::Tensor> inputs, bool float64,
                     SubgraphRunner run_subgraph, int64_t max_elements)
    : node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      float64_(float64),
      run_subgraph_(std::move(run_subgraph)),
      max_elements_(max_elements) {}

OpContext::OpContext(const onnx::NodeProto& node, int64_t opset, std::vector<Value> values, bool float64,
                     SubgraphRunner run_subgraph, int64_t max_elements)
    : OpContext(node, opset, std::vector<at::Tensor>{}, float64, std::move(run_subgraph), max_elements) {
  values_ = std::move(values);
  inputs_.reserve(values_.size());
  for (const auto& v : values_) inputs_.push_back(v.tensor);
}

Value Value::of_sequence(std::vector<at::Tensor> items, std::optional<at::ScalarType> elem_type) {
  Value v;
  v.sequence = std::make_shared<const std::vector<at::Tensor>>(std::move(items));
  v.elem_type = elem_type;
  return v;
}

const Value& OpContext::value(size_t i) const {
  static const Value kAbsent;
  return i < values_.size() ? values_[i] : kAbsent;
}

const Value& OpContext::sequence(size_t i) const {
  const Value& v = value(i);
  if (!v.is_sequence()) fail(fmt::format("input {} must be a sequence, got {}", i, v.defined() ? "a tensor" : "none"));
  return v;
}

const std::string& OpContext::op_type() const { return node_.op_type(); }

int OpContext::num_outputs() const { return node_.output_size(); }

const at::Tensor& OpContext::required(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i].defined()) fail(fmt::format("input {} is required but absent", i));
  return inputs_[i];
}

bool OpContext::overwritable(size_t i) const {
  if (i >= inputs_.size()) return false;
  const at::Tensor& t = inputs_[i];
  return t.defined() && t.layout() == at::kStrided && t.has_storage() && t.use_count() == 1 &&
         t.storage().use_count() == 1 && !t.requires_grad() && t.is_non_overlapping_and_dense();
}

at::ScalarType OpContext::float_type() const { return float64_ ? at::kDouble : at::kFloat; }

at::ScalarType OpContext::promote(at::ScalarType t) const { return float64_ && t == at::kFloat ? at::kDouble : t; }

const onnx::AttributeProto* OpContext::attr(const char* name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool OpContext::has(const char* name) const { return attr(name) != nullptr; }

namespace {

const char* type_name(int t) {
  switch (t) {
    case onnx::AttributeProto::FLOAT: return "FLOAT";
    case onnx::AttributeProto::INT: return "INT";
    case onnx::AttributeProto::STRING: return "STRING";
    case onnx::AttributeProto::TENSOR: return "TENSOR";
    case onnx::AttributeProto::GRAPH: return "GRAPH";
    case onnx::AttributeProto::FLOATS: return "FLOATS";
    case onnx::AttributeProto::INTS: return "INTS";
    case onnx::AttributeProto::STRINGS: return "STRINGS";
    default: return "another type";
  }
}

}  // namespace

#define GRASSAUDIT_ATTR(NAME, TYPE)                                                                         \
  const onnx::AttributeProto* a = attr(NAME);                                                             \
  if (a && a->type() != onnx::AttributeProto::TYPE && a->type() != onnx::AttributeProto::UNDEFINED)       \
    fail(fmt::format("attribute '{}' is {}, expected " #TYPE, NAME, type_name(a->type())));

int64_t OpContext::attr_int(const char* name, int64_t def) const {
  GRASSAUDIT_ATTR(name, INT)
  return a ? a->i() : def;
}

float OpContext::attr_float(const char* name, float def) const {
  GRASSAUDIT_ATTR(name, FLOAT)
  return a ? a->f() : def;
}

std::string OpContext::attr_string(const char* name, const std::string& def) const {
  GRASSAUDIT_ATTR(name, STRING)
  return a ? a->s() : def;
}

std::vector<int64_t> OpContext::attr_ints(const char* name) const {
  GRASSAUDIT_ATTR(name, INTS)
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

std::vector<float> OpContext::attr_floats(const char* name) const {
  GRASSAUDIT_ATTR(name, FLOATS)
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : std::vector<float>{};
}

std::vector<std::string> OpContext::attr_strings(const char* name) const {
  GRASSAUDIT_ATTR(name, STRINGS)
  return a ? std::vector<std::string>(a->strings().begin(), a->strings().end()) : std::vector<std::string>{};
}

at::Tensor OpContext::attr_tensor(const char* name) const {
  GRASSAUDIT_ATTR(name, TENSOR)
  if (!a) return {};
  at::Tensor t = tensor_from_proto(a->t(), "", [&](const std::string& why) { fail(why); });
  return float64_ && t.scalar_type() == at::kFloat ? t.to(at::kDouble) : t;
}

#undef GRASSAUDIT_ATTR

std::vector<Value> OpContext::run_subgraph_values(const char* name, const std::vector<Value>& inputs) const {
  const onnx::AttributeProto* a = attr(name);
  if (!a || a->type() != onnx::AttributeProto::GRAPH) fail(fmt::format("needs the graph attribute '{}'", name));
  return run_subgraph_(*a, inputs);
}

std::vector<at::Tensor> OpContext::run_subgraph(const char* name, const std::vector<at::Tensor>& inputs) const {
  std::vector<at::Tensor> out;
  for (auto& v : run_subgraph_values(name, std::vector<Value>(inputs.begin(), inputs.end()))) {
    if (v.is_sequence()) fail(fmt::format("the sub-graph '{}' returns a sequence where a tensor is read", name));
    out.push_back(std::move(v.tensor));
  }
  return out;
}

void OpContext::fail(const std::string& why) const {
  throw InputError(fmt::format("ONNX node '{}' ({}{}): {}", node_.name(), node_.domain().empty() ? "" : node_.domain() + ".",
                               node_.op_type(), why));
}

void OpContext::check_size(at::IntArrayRef shape, const char* what) const {
  if (span_within(shape, max_elements_) < 0)
    fail(fmt::format("{} would have the shape [{}]: {}", what, fmt::join(shape, ", "),
                     std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })
                         ? "a negative size"
                         : fmt::format("over the {} elements a node may make", max_elements_)));
}

int64_t span_within(at::IntArrayRef shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 1 && n > limit / d)) return -1;
    n *= std::max<int64_t>(d, 1);
  }
  return n;
}

std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<at::IntArrayRef>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  return out;
}

std::vector<int64_t> to_ints(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kLong).contiguous().reshape({-1});
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

int64_t norm_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

at::ScalarType onnx_dtype(const OpContext& ctx, int64_t code) {
  std::string why;
  const auto t = scalar_type_of(code, &why);
  if (!t) ctx.fail(why);
  return *t;
}

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_tensor_ops(t);
    add_nn_ops(t);
    add_rnn_ops(t);
    add_control_ops(t);
    return t;
  }();
  return table;
}

const ValueOpTable& value_op_table() {
  static const ValueOpTable table = [] {
    ValueOpTable t;
    add_sequence_ops(t);
    add_control_value_ops(t);
    return t;
  }();
  return table;
}

bool runs_op(const std::string& type) { return value_op_table().count(type) || op_table().count(type); }

}  // namespace grassaudit::onnx_rt
