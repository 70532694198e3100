#pragma once
// A model file that is one fixed graph, run node by node in C++: a torch.export archive
// (formats/export/exported_program.h) or an ONNX model (formats/onnx/onnx_program.h). The audit sees either
// through GraphProgramTarget (formats/graph/graph_program_target.h), so what the audit does with a graph
// (its inputs bound to --input values, float64 re-runs, jittered and redrawn weights, kept state)
// is written once for every graph format.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

#include "audit/unit_probe.h"

namespace grassaudit {

// A user input of the graph.
struct GraphInput {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  // Per dimension: the size when static, nullopt when symbolic.
  std::vector<std::optional<int64_t>> sizes;
  // Per dimension: the symbol's range when symbolic ({min, max}; max -1: unbounded).
  std::vector<std::pair<int64_t, int64_t>> ranges;
  // Whether the file declares the rank at all (sizes empty and shape_known: a scalar).
  bool shape_known = true;
};

class GraphProgram {
 public:
  using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
  virtual ~GraphProgram() = default;

  virtual const std::vector<GraphInput>& inputs() const = 0;
  // "PyTorch 2.6.0+debian, schema 8.2, flat layout" / "ONNX IR 8, opset 17, pytorch 2.6.0".
  virtual std::string describe() const = 0;
  // "an ExportedProgram", "an ONNX graph": the noun of the notes.
  virtual std::string noun() const = 0;
  // Runs the graph on the user inputs (in inputs() order); the outputs come back in the structure
  // the graph returns (a tensor, a tuple, list or dict with string keys). InputError on a failing
  // node (one line naming it).
  virtual c10::IValue run(const std::vector<at::Tensor>& user_inputs) = 0;

  // The tensors the graph reads besides its inputs, by name: parameters (weights the audit
  // jitters and redraws), buffers (state a run may write), constants.
  virtual NamedTensors& parameters() = 0;
  virtual NamedTensors& buffers() = 0;
  virtual NamedTensors& constants() = 0;
  // The float32 the graph creates on its way (dtype arguments, Cast targets, constants in nodes)
  // read as float64 while `on`; returns how many places that changes.
  virtual int promote_dtype_arguments(bool on) = 0;
  // The first node that draws random numbers, "" when none does.
  virtual std::string first_random_node() const = 0;
  // Whether part of the graph runs with gradients switched off (no gradient crosses it).
  virtual bool has_no_grad_region() const { return false; }
  // The node kinds, in graph order, unique.
  virtual std::vector<std::string> op_census() const = 0;
  // The rows of the table user input `input` indexes: the first dimension of a weight the file
  // holds that the input looks up (an embedding), so ids below it are valid; nullopt when the
  // graph shows no such lookup (the smallest table when it shows several).
  virtual std::optional<int64_t> lookup_table_rows(size_t input) const {
    (void)input;
    return std::nullopt;
  }

  // Where a leak enters (audit/unit_probe.h): the units inside the graph, unit 0 the whole graph;
  // empty where the program cannot be looked inside (why_no_units says why, in a line).
  virtual const std::vector<ProbeUnit>& units() {
    static const std::vector<ProbeUnit> none;
    return none;
  }
  virtual std::string why_no_units() const { return noun() + " that cannot be looked inside"; }
  // run() with every unit's values recorded into `values` (unit 0's left to the caller), the
  // tensor inputs of the units in `fed` and the tensor outputs of those in `held` replaced.
  virtual c10::IValue run_units(const std::vector<at::Tensor>& user_inputs, const UnitTensors& fed,
                                const UnitTensors& held, std::vector<UnitValues>& values) {
    (void)user_inputs, (void)fed, (void)held, (void)values;
    throw std::logic_error("run_units on a graph without units");
  }
};

}  // namespace grassaudit
