#include "formats/graph/graph_units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "util/error.h"

namespace grassaudit {

GraphUnits::GraphUnits(const std::vector<UnitStep>& steps, int nslots, const std::vector<int>& returned,
                       std::optional<std::string> root_op, std::optional<std::string> root_source) {
  units_.push_back(ProbeUnit{"", std::move(root_op), std::move(root_source), std::nullopt, -1});
  std::map<std::string, int> group_of;
  chain_.resize(steps.size() + 1);
  reads_.resize(steps.size() + 1);
  defined_by_.assign(static_cast<size_t>(std::max(nslots, 0)), -1);
  for (size_t si = 0; si < steps.size(); ++si) {
    const UnitStep& s = steps[si];
    int group = 0;
    for (const auto& scope : s.scopes) {
      if (scope.path.empty()) continue;  // the root's own code
      auto it = group_of.find(scope.path);
      if (it == group_of.end()) {
        it = group_of.emplace(scope.path, static_cast<int>(units_.size())).first;
        units_.push_back(ProbeUnit{scope.path, scope.op, scope.source, std::nullopt, group});
      } else {
        ProbeUnit& g = units_[static_cast<size_t>(it->second)];
        if (!g.op && scope.op) g.op = scope.op;
        if (!g.source && scope.source) g.source = scope.source;
      }
      group = it->second;
    }
    std::vector<int>& chain = chain_[si];
    if (s.is_unit) {
      chain.push_back(static_cast<int>(units_.size()));
      units_.push_back(ProbeUnit{units_[static_cast<size_t>(group)].path, s.op, s.source, s.node, group});
    }
    for (int g = group; g > 0; g = units_[static_cast<size_t>(g)].parent) chain.push_back(g);
    std::set<int> seen;
    for (int slot : s.reads)
      if (slot >= 0 && slot < nslots && seen.insert(slot).second) reads_[si].push_back(slot);
    for (int slot : s.defines)
      if (slot >= 0 && slot < nslots) defined_by_[static_cast<size_t>(slot)] = static_cast<int>(si);
  }
  std::set<int> seen;
  for (int slot : returned)
    if (slot >= 0 && slot < nslots && seen.insert(slot).second) reads_.back().push_back(slot);
}

UnitRecorder::UnitRecorder(const GraphUnits& plan, const UnitTensors& fed, const UnitTensors& held,
                           std::vector<UnitValues>& values)
    : plan_(plan), fed_(fed), held_(held), values_(values) {
  values_.resize(plan.units().size());
  in_index_.resize(plan.units().size());
  out_index_.resize(plan.units().size());
}

namespace {

const at::Tensor& replacement(const UnitTensors& given, int unit, size_t leaf, const std::vector<ProbeUnit>& units,
                              const char* what) {
  const auto& list = given.at(unit);
  if (leaf >= list.size()) {
    const ProbeUnit& u = units[static_cast<size_t>(unit)];
    throw InputError(fmt::format("unit {}{} was given {} {}, its run has more", u.path.empty() ? "(root)" : u.path,
                                 u.node ? " node " + *u.node : "", list.size(), what));
  }
  return list[leaf];
}

}  // namespace

std::vector<std::pair<int, at::Tensor>> UnitRecorder::reads(size_t step, const std::function<at::Tensor(int)>& get) {
  std::vector<std::pair<int, at::Tensor>> out;
  const std::vector<int>& here = plan_.chain_.at(step);
  for (int u : here) values_[static_cast<size_t>(u)].called = true;
  static const std::vector<int> kNone;
  for (int slot : plan_.reads_[step]) {
    const int def = plan_.defined_by_[static_cast<size_t>(slot)];
    const std::vector<int>& there = def < 0 ? kNone : plan_.chain_[static_cast<size_t>(def)];
    const auto in = [](const std::vector<int>& c, int u) { return std::find(c.begin(), c.end(), u) != c.end(); };
    const at::Tensor own = get(slot);
    if (!own.defined()) continue;
    at::Tensor v = own;
    // The value crossing unit u's boundary: recorded as its leaf at the first crossing (the
    // replacement where u is fed or held), that leaf at every crossing after.
    const auto cross = [&](std::map<int, size_t>& index, std::vector<at::Tensor>& leaves, const UnitTensors& replaced,
                           int u, const char* what) {
      auto it = index.find(slot);
      if (it == index.end()) {
        if (replaced.count(u)) v = replacement(replaced, u, leaves.size(), plan_.units(), what);
        it = index.emplace(slot, leaves.size()).first;
        leaves.push_back(v);
      }
      v = leaves[it->second];
    };
    // Out of the units that define it, innermost first: a held unit gives its held leaf.
    for (int u : there) {
      if (in(here, u)) break;
      cross(out_index_[static_cast<size_t>(u)], values_[static_cast<size_t>(u)].outputs, held_, u, "outputs");
    }
    // Into the units that read it, outermost first: a fed unit reads its fed leaf.
    for (auto r = here.rbegin(); r != here.rend(); ++r) {
      if (in(there, *r)) continue;
      cross(in_index_[static_cast<size_t>(*r)], values_[static_cast<size_t>(*r)].inputs, fed_, *r, "inputs");
    }
    if (!v.is_same(own)) out.emplace_back(slot, v);
  }
  return out;
}

std::vector<std::string> onnx_scope(const std::string& node_name) {
  std::vector<std::string> parts;
  if (node_name.empty() || node_name[0] != '/') return parts;
  size_t start = 1;
  while (true) {
    const size_t slash = node_name.find('/', start);
    if (slash == std::string::npos) break;  // the last component: the op
    if (slash > start) parts.push_back(node_name.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::vector<std::pair<std::string, std::string>> parse_module_stack(const std::string& stack) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream ss(stack);
  std::string entry;
  while (std::getline(ss, entry, ';')) {
    const size_t first = entry.find(','), last = entry.rfind(',');
    if (first == std::string::npos || last == first) continue;
    const std::string key = entry.substr(0, first);
    if (key.find("_empty_nn_module_stack") != std::string::npos) continue;
    out.emplace_back(entry.substr(first + 1, last - first - 1), entry.substr(last + 1));
  }
  return out;
}

std::optional<SourceFrame> innermost_frame(const std::string& stack_trace) {
  // Frames read: File "<path>", line <n>, in <function>
  std::optional<SourceFrame> found;
  size_t pos = 0;
  while ((pos = stack_trace.find("File \"", pos)) != std::string::npos) {
    const size_t q = stack_trace.find('"', pos + 6);
    if (q == std::string::npos) break;
    const std::string path = stack_trace.substr(pos + 6, q - pos - 6);
    pos = q + 1;
    const size_t l = stack_trace.find("line ", pos);
    const size_t nl = stack_trace.find('\n', pos);
    if (l == std::string::npos || (nl != std::string::npos && l > nl)) continue;
    int64_t line = 0;
    size_t k = l + 5;
    while (k < stack_trace.size() && std::isdigit(static_cast<unsigned char>(stack_trace[k])))
      line = line * 10 + (stack_trace[k++] - '0');
    std::string function;
    const size_t in = stack_trace.find(", in ", k);
    if (in != std::string::npos && (nl == std::string::npos || in < nl)) {
      size_t e = in + 5;
      while (e < stack_trace.size() && stack_trace[e] != '\n' && stack_trace[e] != '\r') ++e;
      function = stack_trace.substr(in + 5, e - in - 5);
    }
    // Frames of torch itself (its modules' forwards, export's own passes) name no model code.
    const bool torch_own = path.find("torch/") == 0 || path.find("/torch/") != std::string::npos ||
                           path.find("site-packages/") != std::string::npos;
    if (torch_own) continue;
    const size_t slash = path.find_last_of("/\\");
    found = SourceFrame{slash == std::string::npos ? path : path.substr(slash + 1), function, line};
  }
  return found;
}

}  // namespace grassaudit
