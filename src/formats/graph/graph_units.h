#pragma once
// The units a leak can be named at inside one graph (audit/unit_probe.h), written once for both
// graph readers (formats/export, formats/onnx): a group per module path (the torch.export node's
// nn_module_stack, the ONNX node's scoped name), unit 0 the whole graph, and one unit per op node
// under its group. A run of the graph with a UnitRecorder records each unit's boundary values
// and replaces the inputs of the fed units and the outputs of the held ones:
//   a group's inputs: the slots its steps read that a step outside it defines (or the graph's
//     inputs), in the order of their first read; its outputs: the slots its steps define that a
//     step outside it reads (or the graph returns), in the order of their first read outside;
//   an op node's inputs: the slots it reads; its outputs: the slots it defines that are read.
// Only tensors are recorded and replaced (sizes and other values are the run's own).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/unit_probe.h"

namespace grassaudit {

// `common` cut to what it shares with `other` from the start (`other` itself when nothing was met
// yet): the module stack or scope a set of nodes shares, met node by node.
template <class T>
void keep_common_prefix(std::optional<std::vector<T>>& common, const std::vector<T>& other) {
  if (!common) {
    common = other;
    return;
  }
  size_t k = 0;
  while (k < common->size() && k < other.size() && (*common)[k] == other[k]) ++k;
  common->resize(k);
}

// One step of a graph as the units see it.
struct UnitStep {
  // Its module path, outermost first: each entry a group (path "blocks.0.mix", class or op "Mix",
  // source "Mix.forward, model.py:57" or none). Empty: the root's own code.
  struct Scope {
    std::string path;
    std::optional<std::string> op, source;
  };
  std::vector<Scope> scopes;
  bool is_unit = false;  // an op node (else: a size computation, an assert, ...: part of its group only)
  std::optional<std::string> op, source, node;
  std::vector<int> reads;    // the slots it reads (an op's sub-graphs' captures included)
  std::vector<int> defines;  // the slots it writes
};

class GraphUnits {
 public:
  GraphUnits() = default;
  // `steps` in graph order; `nslots` the slots of the graph; `returned` the slots read after the
  // last step (the graph's outputs, buffer writes); `root_op`, `root_source`: what names unit 0.
  GraphUnits(const std::vector<UnitStep>& steps, int nslots, const std::vector<int>& returned,
             std::optional<std::string> root_op = std::nullopt, std::optional<std::string> root_source = std::nullopt);

  const std::vector<ProbeUnit>& units() const { return units_; }
  bool empty() const { return units_.empty(); }
  size_t steps() const { return chain_.size() - 1; }

 private:
  friend class UnitRecorder;
  std::vector<ProbeUnit> units_;
  // Per step (and one more: what the graph returns), the units it lies in, innermost first, the
  // root left out; and the slots it reads.
  std::vector<std::vector<int>> chain_;
  std::vector<std::vector<int>> reads_;
  std::vector<int> defined_by_;  // per slot: the step that writes it, -1 for the graph's inputs
};

// One run's records: before each step, the values it reads as its units see them.
class UnitRecorder {
 public:
  // `values` sized units().size(); unit 0's entry is left to the caller.
  UnitRecorder(const GraphUnits& plan, const UnitTensors& fed, const UnitTensors& held, std::vector<UnitValues>& values);

  // What step `step` (steps() for what the graph returns) reads in place of the run's own values:
  // (slot, tensor) pairs, given `get` (the tensor at a slot; undefined when it holds none).
  // InputError when a fed or held unit is given other leaves than it has.
  std::vector<std::pair<int, at::Tensor>> reads(size_t step, const std::function<at::Tensor(int)>& get);

 private:
  const GraphUnits& plan_;
  const UnitTensors& fed_;
  const UnitTensors& held_;
  std::vector<UnitValues>& values_;
  std::vector<std::map<int, size_t>> in_index_, out_index_;  // per unit: slot -> leaf
};

// "/blocks.0/mix/TopK" -> {"blocks.0", "mix"}: an ONNX node name's scope (the exporter's module
// path, the last component the op), empty when the name has none.
std::vector<std::string> onnx_scope(const std::string& node_name);

// "key,path,class;key,path,class" (a torch.export node's nn_module_stack) -> (path, class) pairs,
// outermost first; entries that are not modules (an assert's empty-stack marker) left out.
std::vector<std::pair<std::string, std::string>> parse_module_stack(const std::string& stack);

// The innermost frame of a torch.export node's stack_trace outside torch itself: (file basename,
// line, function); nullopt when there is none.
struct SourceFrame {
  std::string file, function;
  int64_t line = 0;
};
std::optional<SourceFrame> innermost_frame(const std::string& stack_trace);

}  // namespace grassaudit
