#include "formats/export/export_graph.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "util/error.h"

// The higher-order ops (cond, while_loop, map_impl, scan, wrap_with_set_grad_enabled), run as
// torch/_higher_order_ops defines their eager (dense) semantics.
namespace grassaudit {

using namespace exported;

namespace {

std::vector<c10::IValue> tensors_of(const c10::IValue& v, const std::string& where) {
  std::vector<c10::IValue> out;
  if (v.isTensorList()) {
    for (const auto& t : v.toTensorVector()) out.emplace_back(t);
  } else if (v.isTensor()) {
    out.push_back(v);
  } else if (!v.isNone()) {
    throw InputError(fmt::format("{}: expected a list of tensors", where));
  }
  return out;
}

bool truth(const c10::IValue& v, const std::string& where) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.numel() != 1) throw InputError(fmt::format("{}: a condition of {} elements", where, t.numel()));
    return t.item().toBool();
  }
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  throw InputError(fmt::format("{}: a condition that is neither a tensor nor a boolean", where));
}

std::vector<c10::IValue> concat(std::vector<c10::IValue> a, const std::vector<c10::IValue>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// The higher-order ops as torch/_higher_order_ops defines their eager (dense) semantics.
std::vector<c10::IValue> ExportedProgram::Impl::higher_order(const Step& s, const std::vector<c10::IValue>& a,
                                                             const std::string& where) const {
  const std::string op = s.target.substr(std::strlen("torch.ops.higher_order."));
  auto need = [&](size_t n) {
    if (a.size() < n) throw InputError(fmt::format("{}: {} values given, {} needs {}", where, a.size(), op, n));
  };
  if (op == "cond") {  // cond(pred, true_graph, false_graph, operands)
    need(2);
    return call(s.subgraphs[truth(a[0], where) ? 0 : 1], tensors_of(a[1], where));
  }
  if (op == "wrap_with_set_grad_enabled") {  // (enabled, graph, *args)
    need(1);
    at::AutoGradMode mode(truth(a[0], where));
    return call(s.subgraphs[0], std::vector<c10::IValue>(a.begin() + 1, a.end()));
  }
  if (op == "while_loop") {  // (cond_graph, body_graph, carried_inputs, additional_inputs)
    need(2);
    std::vector<c10::IValue> carried = tensors_of(a[0], where);
    const std::vector<c10::IValue> extra = tensors_of(a[1], where);
    while (true) {
      const auto c = call(s.subgraphs[0], concat(carried, extra));
      if (c.size() != 1) throw InputError(fmt::format("{}: the condition returns {} values", where, c.size()));
      if (!truth(c[0], where)) break;
      auto next = call(s.subgraphs[1], concat(carried, extra));
      if (next.size() != carried.size())
        throw InputError(fmt::format("{}: the body returns {} values for {} carried", where, next.size(), carried.size()));
      carried = std::move(next);
    }
    return carried;
  }
  if (op == "map_impl") {  // (graph, xs, pos_args): the graph on each slice of xs along dim 0, stacked
    need(2);
    const std::vector<c10::IValue> xs = tensors_of(a[0], where), rest = tensors_of(a[1], where);
    if (xs.empty()) throw InputError(fmt::format("{}: nothing to map over", where));
    const int64_t n = xs[0].toTensor().size(0);
    std::vector<std::vector<at::Tensor>> per_output;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<c10::IValue> in;
      for (const auto& x : xs) in.emplace_back(x.toTensor().select(0, i));
      const auto out = call(s.subgraphs[0], concat(in, rest));
      if (per_output.empty()) per_output.resize(out.size());
      if (out.size() != per_output.size()) throw InputError(fmt::format("{}: the body's outputs vary", where));
      for (size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k].toTensor());
    }
    std::vector<c10::IValue> result;
    for (auto& ts : per_output) result.emplace_back(at::stack(ts, 0));
    return result;
  }
  if (op == "scan") {  // (combine_graph, init, xs, dim, reverse, additional_inputs)
    need(5);
    std::vector<c10::IValue> carry = tensors_of(a[0], where);
    const std::vector<c10::IValue> xs = tensors_of(a[1], where);
    const int64_t dim = a[2].toInt();
    const bool reverse = truth(a[3], where);
    const std::vector<c10::IValue> extra = a.size() > 4 ? tensors_of(a[4], where) : std::vector<c10::IValue>{};
    if (xs.empty()) return carry;
    const int64_t n = xs[0].toTensor().size(dim);
    std::vector<std::vector<at::Tensor>> ys;  // per output, per step (in step order)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = reverse ? n - 1 - i : i;
      std::vector<c10::IValue> in = carry;
      for (const auto& x : xs) in.emplace_back(x.toTensor().select(dim, t));
      const auto out = call(s.subgraphs[0], concat(in, extra));
      if (out.size() < carry.size()) throw InputError(fmt::format("{}: the combine graph returns too few values", where));
      carry.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(carry.size()));
      if (ys.empty()) ys.resize(out.size() - carry.size());
      for (size_t k = 0; k < ys.size(); ++k) ys[k].push_back(out[carry.size() + k].toTensor());
    }
    std::vector<c10::IValue> result = carry;
    for (auto& y : ys) {
      if (reverse) std::reverse(y.begin(), y.end());  // ys[t] is the output at position t
      result.emplace_back(at::stack(y, 0));
    }
    return result;
  }
  throw InputError(fmt::format("{}: the higher-order op {} is not run by grassaudit", where, op));
}

}  // namespace grassaudit
