#include "formats/export/export_graph.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "util/error_text.h"

// Running a graph: each op through the dispatcher, symbolic arithmetic in C++, the user outputs put
// back into the structure the forward returned.
namespace grassaudit {

using namespace exported;

namespace {

// A number passed where the schema wants a Tensor, as Python's argument parser passes it: a
// 0-dim tensor marked as a wrapped number, so type promotion treats it as a scalar.
at::Tensor wrapped_number(const c10::IValue& v) {
  at::Tensor t = v.isDouble() ? at::scalar_tensor(v.toDouble(), at::kDouble)
                 : v.isBool() ? at::scalar_tensor(static_cast<int64_t>(v.toBool()), at::kLong)
                              : at::scalar_tensor(v.toInt(), at::kLong);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

double num(const c10::IValue& v) {
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isDouble()) return v.toDouble();
  if (v.isBool()) return v.toBool() ? 1 : 0;
  throw InputError("a symbolic value that is not a number");
}

int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) throw InputError("a symbolic size divides by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

c10::IValue operator_value(const std::string& op, const std::vector<c10::IValue>& a, const std::string& node) {
  auto need = [&](size_t n) {
    if (a.size() != n) throw InputError(fmt::format("{}: {} takes {} arguments, got {}", node, op, n, a.size()));
  };
  const bool ints = std::all_of(a.begin(), a.end(), [](const c10::IValue& v) { return v.isInt() || v.isBool(); });
  auto i = [&](size_t k) { return a[k].isBool() ? int64_t{a[k].toBool()} : a[k].toInt(); };
  const std::string f = op.substr(op.find('.') + 1);
  if (f == "add" || f == "sub" || f == "mul" || f == "floordiv" || f == "mod" || f == "pow" || f == "sym_max" ||
      f == "sym_min") {
    need(2);
    if (ints) {
      const int64_t x = i(0), y = i(1);
      if (f == "add") return x + y;
      if (f == "sub") return x - y;
      if (f == "mul") return x * y;
      if (f == "floordiv") return floordiv(x, y);
      if (f == "mod") {
        if (y == 0) throw InputError(fmt::format("{}: a symbolic size modulo zero", node));
        return x - floordiv(x, y) * y;
      }
      if (f == "sym_max") return std::max(x, y);
      if (f == "sym_min") return std::min(x, y);
      if (f == "pow" && y >= 0) {
        int64_t r = 1;
        for (int64_t k = 0; k < y; ++k) r *= x;
        return r;
      }
    }
    const double x = num(a[0]), y = num(a[1]);
    if (f == "add") return x + y;
    if (f == "sub") return x - y;
    if (f == "mul") return x * y;
    if (f == "floordiv") return std::floor(x / y);
    if (f == "mod") return x - std::floor(x / y) * y;
    if (f == "pow") return std::pow(x, y);
    if (f == "sym_max") return std::max(x, y);
    return std::min(x, y);
  }
  if (f == "truediv") {
    need(2);
    return num(a[0]) / num(a[1]);
  }
  if (f == "eq" || f == "ne" || f == "lt" || f == "le" || f == "gt" || f == "ge") {
    need(2);
    const double x = num(a[0]), y = num(a[1]);
    if (f == "eq") return x == y;
    if (f == "ne") return x != y;
    if (f == "lt") return x < y;
    if (f == "le") return x <= y;
    if (f == "gt") return x > y;
    return x >= y;
  }
  if (f == "and_" || f == "or_") {
    need(2);
    if (a[0].isBool() && a[1].isBool()) return f == "and_" ? (a[0].toBool() && a[1].toBool()) : (a[0].toBool() || a[1].toBool());
    return f == "and_" ? (i(0) & i(1)) : (i(0) | i(1));
  }
  if (f == "neg") {
    need(1);
    return a[0].isInt() ? c10::IValue(-a[0].toInt()) : c10::IValue(-num(a[0]));
  }
  if (f == "not_" || f == "sym_not") {
    need(1);
    return !static_cast<bool>(num(a[0]));
  }
  if (f == "sym_float") {
    need(1);
    return num(a[0]);
  }
  if (f == "sym_int" || f == "trunc") {
    need(1);
    return static_cast<int64_t>(std::trunc(num(a[0])));
  }
  if (f == "ceil" || f == "floor") {
    need(1);
    return static_cast<int64_t>(f == "ceil" ? std::ceil(num(a[0])) : std::floor(num(a[0])));
  }
  if (f == "sym_sqrt" || f == "sqrt") {
    need(1);
    return std::sqrt(num(a[0]));
  }
  throw InputError(fmt::format("{}: the symbolic operation {} is not evaluated by grassaudit", node, op));
}

}  // namespace

c10::IValue ExportedProgram::Impl::value(const Arg& a, std::vector<c10::IValue>& env) const {
  switch (a.k) {
    case Arg::K::kConst:
      if (a.float32_dtype && promote) return static_cast<int64_t>(at::kDouble);
      if (a.to_tensor) return wrapped_number(a.value);
      return a.value;
    case Arg::K::kSlot:
      if (a.to_double && env[a.slot].isInt()) return static_cast<double>(env[a.slot].toInt());
      if (a.to_tensor && !env[a.slot].isTensor()) return wrapped_number(env[a.slot]);
      return env[a.slot];
    case Arg::K::kSlotList: {
      c10::List<at::Tensor> l;
      l.reserve(a.slots.size());
      for (int s : a.slots) l.push_back(env[s].toTensor());
      return l;
    }
    case Arg::K::kOptSlotList: {
      c10::List<c10::optional<at::Tensor>> l;
      for (int s : a.slots) l.push_back(s >= 0 ? c10::optional<at::Tensor>(env[s].toTensor()) : c10::nullopt);
      return l;
    }
    case Arg::K::kSymIntList: {
      std::vector<int64_t> v(a.slots.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = a.slots[i] >= 0 ? env[a.slots[i]].toInt() : a.ints[i];
      return v;
    }
  }
  return {};
}

// Runs the graph's steps on `env` (its inputs bound): each op through the dispatcher, symbolic
// arithmetic in C++, higher-order ops by running their sub-graphs. With a recorder, each step
// reads what its units see (audit/unit_probe.h: fed inputs, held outputs) and the run's own
// values are back in their slots after it.
void ExportedProgram::Impl::execute(std::vector<c10::IValue>& env, UnitRecorder* recorder) const {
  std::vector<c10::IValue> stack;
  std::vector<std::pair<int, c10::IValue>> own;
  for (size_t si = 0; si < steps.size(); ++si) {
    const Step& s = steps[si];
    if (recorder) {
      own.clear();
      for (auto& [slot, t] : recorder->reads(si, [&](int k) { return env[k].isTensor() ? env[k].toTensor() : at::Tensor(); })) {
        own.emplace_back(slot, std::move(env[slot]));
        env[slot] = std::move(t);
      }
    }
    run_step(s, env, stack);
    for (auto& [slot, v] : own) env[slot] = std::move(v);
    own.clear();
    for (int slot : s.release) env[slot] = c10::IValue();
  }
}

// One step on `env`: its arguments read from their slots, its results written to theirs.
void ExportedProgram::Impl::run_step(const Step& s, std::vector<c10::IValue>& env, std::vector<c10::IValue>& stack) const {
  {
    auto where = [&]() { return fmt::format("node {} ({})", s.name.empty() ? "?" : s.name, s.target); };
    switch (s.k) {
      case Step::K::kOp: {
        stack.clear();
        for (const auto& a : s.args) stack.push_back(value(a, env));
        try {
          s.op->callBoxed(&stack);
        } catch (const c10::Error& e) {
          throw InputError(fmt::format("{} failed: {}", where(), first_meaningful_line(e.what_without_backtrace())));
        } catch (const std::exception& e) {
          throw InputError(fmt::format("{} failed: {}", where(), first_meaningful_line(e.what())));
        }
        for (size_t r = 0; r < s.outs.size() && r < stack.size(); ++r) {
          const Out& o = s.outs[r];
          if (!o.list) {
            if (o.slot >= 0) env[o.slot] = std::move(stack[r]);
            continue;
          }
          const auto l = stack[r].toTensorVector();
          if (l.size() != o.slots.size())
            throw InputError(fmt::format("{} returned {} tensors, the graph names {}", where(), l.size(), o.slots.size()));
          for (size_t k = 0; k < l.size(); ++k)
            if (o.slots[k] >= 0) env[o.slots[k]] = l[k];
        }
        break;
      }
      case Step::K::kSymSize:
      case Step::K::kSymStride:
      case Step::K::kSymNumel: {
        const c10::IValue t = value(s.args.at(0), env);
        if (!t.isTensor()) throw InputError(fmt::format("{}: not given a tensor", where()));
        int64_t v;
        if (s.k == Step::K::kSymNumel) {
          v = t.toTensor().numel();
        } else {
          const int64_t dim = value(s.args.at(1), env).toInt();
          const int64_t nd = t.toTensor().dim();
          if (dim < -nd || dim >= nd) throw InputError(fmt::format("{}: dimension {} of a {}-d tensor", where(), dim, nd));
          v = s.k == Step::K::kSymSize ? t.toTensor().size(dim) : t.toTensor().stride(dim);
        }
        if (!s.outs.empty() && s.outs[0].slot >= 0) env[s.outs[0].slot] = v;
        break;
      }
      case Step::K::kOperator: {
        std::vector<c10::IValue> a;
        for (const auto& arg : s.args) a.push_back(value(arg, env));
        c10::IValue v = operator_value(s.target, a, where());
        if (!s.outs.empty() && s.outs[0].slot >= 0) env[s.outs[0].slot] = std::move(v);
        break;
      }
      case Step::K::kAssertScalar: {
        const c10::IValue c = value(s.args.at(0), env);
        if (!static_cast<bool>(num(c))) {
          const std::string msg = s.args.size() > 1 && s.args[1].k == Arg::K::kConst && s.args[1].value.isString()
                                      ? s.args[1].value.toStringRef()
                                      : "";
          throw InputError(fmt::format("a runtime assert of the exported program fails at these input sizes: {}",
                                       msg.empty() ? s.name : msg));
        }
        break;
      }
      case Step::K::kHigherOrder: {
        std::vector<c10::IValue> a;
        for (const auto& arg : s.args) a.push_back(value(arg, env));
        std::vector<c10::IValue> r = higher_order(s, a, where());
        if (s.outs.size() == 1 && s.outs[0].list) {
          const Out& o = s.outs[0];
          if (r.size() != o.slots.size())
            throw InputError(fmt::format("{} returned {} values, the graph names {}", where(), r.size(), o.slots.size()));
          for (size_t k = 0; k < r.size(); ++k)
            if (o.slots[k] >= 0) env[o.slots[k]] = std::move(r[k]);
        } else {
          if (r.size() < s.outs.size())
            throw InputError(fmt::format("{} returned {} values, the graph names {}", where(), r.size(), s.outs.size()));
          for (size_t k = 0; k < s.outs.size(); ++k)
            if (s.outs[k].slot >= 0) env[s.outs[k].slot] = std::move(r[k]);
        }
        break;
      }
      case Step::K::kConstrainRange:
      case Step::K::kNoop: break;
    }
  }
}

std::vector<c10::IValue> ExportedProgram::Impl::call(size_t index, const std::vector<c10::IValue>& inputs) const {
  const SubGraph& sg = subgraphs.at(index);
  if (inputs.size() != sg.inputs.size())
    throw InputError(fmt::format("sub-graph {} takes {} inputs, given {}", sg.name, sg.inputs.size(), inputs.size()));
  std::vector<c10::IValue> env(sg.graph->nslots);
  for (size_t i = 0; i < inputs.size(); ++i) env[sg.inputs[i]] = inputs[i];
  sg.graph->execute(env);
  std::vector<c10::IValue> out;
  out.reserve(sg.outputs.size());
  for (const auto& o : sg.outputs) out.push_back(sg.graph->value(o, env));
  return out;
}

namespace exported {

c10::IValue build(const Spec& s, const std::vector<c10::IValue>& leaves, size_t& next) {
  switch (s.k) {
    case Spec::K::kLeaf: return leaves.at(next++);
    case Spec::K::kTuple: {
      std::vector<c10::IValue> items;
      for (const auto& c : s.children) items.push_back(build(c, leaves, next));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    case Spec::K::kList: {
      c10::impl::GenericList l(c10::AnyType::get());
      for (const auto& c : s.children) l.push_back(build(c, leaves, next));
      return l;
    }
    case Spec::K::kDict: {
      c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
      for (size_t i = 0; i < s.children.size(); ++i) d.insert(s.keys[i], build(s.children[i], leaves, next));
      return d;
    }
  }
  return {};
}

}  // namespace exported

}  // namespace grassaudit
