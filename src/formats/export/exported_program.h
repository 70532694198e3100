#pragma once
// A torch.export archive run in C++ with no Python: the serialized ExportedProgram (PyTorch's
// serde schema, torch/_export/serde/schema.py) is read once into a list of steps, and each run
// interprets the graph node by node through the ATen dispatcher (the schema of the op this
// LibTorch has, its arguments built from the node's named arguments, defaults for the rest).
// Symbolic sizes are plain integers at run time: aten.sym_size and the _operator arithmetic on
// them are evaluated as the graph says, so a graph exported with a dynamic dimension runs at any
// size its range constraints allow; runtime asserts (_assert_scalar) are checked. Higher-order
// ops (cond, while_loop, scan, map_impl, wrap_with_set_grad_enabled) run their sub-graphs, which
// the archive holds inline, as PyTorch's eager implementations of those ops do.
//
// Layouts read (formats/model_file.h says how they are recognised):
//   flat (PyTorch 2.6 torch.export.save): serialized_exported_program.json,
//     serialized_state_dict.pt, serialized_constants.pt (torch.save pickles), version
//   packaged (PyTorch 2.8+ PT2 archive spec): archive_format "pt2", models/<name>.json, raw
//     weights and constants under data/weights, data/constants with their PayloadConfig JSON
// Weight pickles are read with an allowlist (formats/torch/weights_unpickler.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

#include "formats/graph/graph_program.h"

namespace grassaudit {

class UnitRecorder;
using ExportedInput = GraphInput;

class ExportedProgram : public GraphProgram {
 public:
  // InputError, one line (without the path), on anything it cannot read: a damaged archive, an
  // archive version or schema it does not read, a missing weight, an unknown argument kind, an
  // op this LibTorch lacks (named, with the file's producer version).
  static std::unique_ptr<ExportedProgram> load(const std::string& path);
  ~ExportedProgram() override;

  const std::vector<ExportedInput>& inputs() const override;
  // "PyTorch 2.6.0+debian, schema 8.2, flat layout" for messages and notes.
  std::string describe() const override;
  std::string noun() const override { return "an ExportedProgram"; }
  // Runs the graph on the user inputs (in inputs() order); the user outputs come back in the
  // structure the exported forward returned (tensor, tuple, list or dict with string keys).
  // Buffer mutations the graph records are written to the buffers. InputError on a failing op or
  // runtime assert (one line naming the node).
  c10::IValue run(const std::vector<at::Tensor>& user_inputs) override;

  // The tensors the graph reads besides its inputs, by name (parameters, buffers, constants):
  // the target converts them (to_dtype), jitters them, hashes them, redraws them.
  NamedTensors& parameters() override;
  NamedTensors& buffers() override;
  NamedTensors& constants() override;
  // The graph's float32 dtype arguments read as float64 (the float64 re-run of an export that
  // casts to float32 on its way); returns how many arguments that changes.
  int promote_dtype_arguments(bool on) override;
  // The first node that draws random numbers (dropout with a train flag that is not the constant
  // false, rand*, bernoulli, ...), "" when none does.
  std::string first_random_node() const override;
  // Whether a run changes buffers (the graph's buffer mutations).
  bool mutates_buffers() const;
  // Whether part of the graph runs with gradients switched off (torch.no_grad() regions:
  // wrap_with_set_grad_enabled(False, ...)): no gradient crosses them.
  bool has_no_grad_region() const override;
  // The node targets, in graph order, unique (the census of the README).
  std::vector<std::string> op_census() const override;
  // aten.embedding or aten.index_select (dim 0) on a parameter, buffer or constant with the input
  // as its indices: that table's first dimension (formats/export/export_lookup_tables.cpp).
  std::optional<int64_t> lookup_table_rows(size_t input) const override;
  // The module groups of the nodes' nn_module_stack and the op nodes (formats/graph/graph_units.h),
  // named by their stack traces (formats/export/exported_program_units.cpp).
  const std::vector<ProbeUnit>& units() override;
  c10::IValue run_units(const std::vector<at::Tensor>& user_inputs, const UnitTensors& fed, const UnitTensors& held,
                        std::vector<UnitValues>& values) override;

 private:
  ExportedProgram();
  c10::IValue run_with(const std::vector<at::Tensor>& user_inputs, UnitRecorder* recorder);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grassaudit
