#include <ATen/ATen.h>
#include <fmt/format.h>

#include "formats/onnx/onnx_op.h"

// The sequence type's ops (ONNX spec, opset 11 on): what a scripted loop that appends to a list
// and stacks it exports to (SequenceEmpty before a Loop, SequenceInsert in its body,
// ConcatFromSequence after it), and the rest of the family. A sequence holds tensors of one
// element type; every op makes a new sequence, none changes its input.
namespace grassaudit::onnx_rt {

namespace {

// The element type a sequence holds, if it says.
std::optional<at::ScalarType> elem_type_of(const Value& s) {
  if (!s.sequence->empty()) return s.sequence->front().scalar_type();
  return s.elem_type;
}

// fail() unless t may join a sequence of `type`.
void check_elem(const OpContext& c, std::optional<at::ScalarType> type, const at::Tensor& t) {
  if (type && *type != t.scalar_type())
    c.fail(fmt::format("a {} tensor cannot join a sequence of {}", c10::toString(t.scalar_type()), c10::toString(*type)));
}

// A position input (a one-element integer tensor) in [-n, n] (insert) or [-n, n-1] (at, erase),
// made non-negative; `end_ok`: n itself is allowed.
int64_t position(const OpContext& c, const at::Tensor& p, int64_t n, bool end_ok) {
  if (p.numel() != 1 || at::isFloatingType(p.scalar_type()) || p.scalar_type() == at::kBool)
    c.fail("the position is not one integer");
  const int64_t i = p.item<int64_t>();
  const int64_t hi = end_ok ? n : n - 1;
  if (i < -n || i > hi) c.fail(fmt::format("position {} is outside a sequence of {} (allowed: {} to {})", i, n, -n, hi));
  return i < 0 ? i + n : i;
}

Vs op_sequence_empty(OpContext& c) {
  const at::ScalarType type = c.promote(onnx_dtype(c, c.attr_int("dtype", 1)));  // 1: FLOAT
  return {Value::of_sequence({}, type)};
}

Vs op_sequence_construct(OpContext& c) {
  Ts items;
  for (size_t i = 0; i < c.num_values(); ++i) {
    const Value& v = c.value(i);
    if (!v.tensor.defined()) c.fail(fmt::format("input {} is not a tensor", i));
    if (!items.empty()) check_elem(c, items.front().scalar_type(), v.tensor);
    items.push_back(v.tensor);
  }
  if (items.empty()) c.fail("no tensors to make a sequence of");
  return {Value::of_sequence(std::move(items))};
}

Vs op_sequence_insert(OpContext& c) {
  const Value& s = c.sequence(0);
  const at::Tensor& t = c.required(1);
  check_elem(c, elem_type_of(s), t);
  Ts items = *s.sequence;
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t at = c.input(2).defined() ? position(c, c.input(2), n, true) : n;
  items.insert(items.begin() + at, t);
  return {Value::of_sequence(std::move(items), elem_type_of(s))};
}

Vs op_sequence_at(OpContext& c) {
  const Value& s = c.sequence(0);
  const int64_t n = static_cast<int64_t>(s.sequence->size());
  return {Value((*s.sequence)[position(c, c.required(1), n, false)])};
}

Vs op_sequence_erase(OpContext& c) {
  const Value& s = c.sequence(0);
  Ts items = *s.sequence;
  const int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) c.fail("erase from an empty sequence");
  const int64_t at = c.input(1).defined() ? position(c, c.input(1), n, false) : n - 1;
  items.erase(items.begin() + at);
  return {Value::of_sequence(std::move(items), elem_type_of(s))};
}

Vs op_sequence_length(OpContext& c) {
  return {Value(at::scalar_tensor(static_cast<int64_t>(c.sequence(0).sequence->size()), at::kLong))};
}

// ConcatFromSequence(seq; axis, new_axis): torch.cat, or torch.stack with new_axis = 1 (where the
// axis may also be the one past the last).
Vs op_concat_from_sequence(OpContext& c) {
  const Value& s = c.sequence(0);
  if (!c.has("axis")) c.fail("needs the attribute 'axis'");
  if (s.sequence->empty()) c.fail("concatenates an empty sequence (nothing to take a shape from)");
  const bool stack = c.attr_int("new_axis", 0) != 0;
  const Ts& items = *s.sequence;
  const int64_t rank = items.front().dim() + (stack ? 1 : 0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), rank);
  std::vector<int64_t> shape = items.front().sizes().vec();
  int64_t joined = 0;
  for (const auto& t : items) {
    if (t.dim() != items.front().dim()) c.fail("the sequence's tensors differ in rank");
    joined += stack ? 1 : t.size(axis);
  }
  if (stack) shape.insert(shape.begin() + axis, joined);
  else shape[axis] = joined;
  c.check_size(shape, "the concatenation");
  return {Value(stack ? at::stack(items, axis) : at::cat(items, axis))};
}

// SplitToSequence(input, split?; axis, keepdims): pieces of the sizes `split` lists, or of its
// one size (the last piece shorter), or of size 1 (squeezed unless keepdims) when it is absent.
Vs op_split_to_sequence(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const int64_t n = x.dim() ? x.size(axis) : 0;
  const at::Tensor split = c.input(1);
  Ts items;
  if (!split.defined()) {
    const bool keep = c.attr_int("keepdims", 1) != 0;
    for (int64_t i = 0; i < n; ++i) items.push_back(keep ? x.narrow(axis, i, 1) : x.select(axis, i));
  } else if (split.dim() == 0) {
    const int64_t size = split.item<int64_t>();
    if (size <= 0) c.fail(fmt::format("split size {} is not positive", size));
    items = x.split(size, axis);
  } else {
    const auto sizes = to_ints(split);
    int64_t sum = 0;
    for (int64_t v : sizes) {
      if (v < 0) c.fail(fmt::format("split size {} is negative", v));
      sum += v;
    }
    if (sum != n) c.fail(fmt::format("the split sizes sum to {}, the axis is {} long", sum, n));
    items = x.split_with_sizes(sizes, axis);
  }
  return {Value::of_sequence(std::move(items), x.scalar_type())};
}

// Identity passes a tensor or a sequence (opset 14 on) as it is.
Vs op_sequence_identity(OpContext& c) {
  if (!c.value(0).defined()) c.fail("input 0 is required but absent");
  return {c.value(0)};
}

}  // namespace

void add_sequence_ops(ValueOpTable& t) {
  t["SequenceEmpty"] = op_sequence_empty;
  t["SequenceConstruct"] = op_sequence_construct;
  t["SequenceInsert"] = op_sequence_insert;
  t["SequenceAt"] = op_sequence_at;
  t["SequenceErase"] = op_sequence_erase;
  t["SequenceLength"] = op_sequence_length;
  t["ConcatFromSequence"] = op_concat_from_sequence;
  t["SplitToSequence"] = op_split_to_sequence;
  t["Identity"] = op_sequence_identity;
}

}  // namespace grassaudit::onnx_rt
