#pragma once
// An ONNX model run in C++: the ModelProto is read with libonnx's compiled schema, checked once
// (every node's op known to this reader at the model's opset, every name defined before it is
// read, every initializer's bytes matching its shape), and each run interprets the graph node by
// node, each node mapped to ATen ops (formats/onnx/onnx_op.h). Sub-graphs (If's branches, Loop's and
// Scan's bodies) see the names of the graphs around them, as ONNX scoping says.
//
// Opsets: the default domain ("" / "ai.onnx") from 7 to the newest this libonnx knows; a node of
// another domain, an op this reader does not run, or an opset outside that range is one line
// naming the node, its op type and domain.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "formats/graph/graph_program.h"
#include "formats/onnx/onnx_op.h"

namespace onnx {
class ModelProto;
}

namespace grassaudit {
class UnitRecorder;
}

namespace grassaudit::onnx_rt {

class OnnxProgram : public GraphProgram {
 public:
  // InputError, one line (without the path), on anything it cannot read or run.
  static std::unique_ptr<OnnxProgram> load(const std::string& path);
  // The same from the file's bytes; `model_dir`: where external data may be read from ("" = none).
  static std::unique_ptr<OnnxProgram> from_bytes(const std::string& bytes, const std::string& model_dir);
  ~OnnxProgram() override;

  const std::vector<GraphInput>& inputs() const override;
  std::string describe() const override;
  std::string noun() const override { return "an ONNX graph"; }
  // One output: the tensor; several: a dict by output name, in the graph's order.
  c10::IValue run(const std::vector<at::Tensor>& user_inputs) override;
  // The outputs in the graph's order (names in output_names()). `check_declared`: refuse inputs
  // whose rank or static sizes differ from the graph's declaration (off for ONNX's own test data,
  // some of which feeds other ranks than the graph declares).
  std::vector<at::Tensor> run_all(const std::vector<at::Tensor>& user_inputs, bool check_declared = true);
  const std::vector<std::string>& output_names() const;
  // The same on values: inputs and outputs may be sequences of tensors (ONNX's own tests feed and
  // expect them; the audit's inputs and outputs are tensors).
  std::vector<Value> run_values(const std::vector<Value>& user_inputs);

  NamedTensors& parameters() override;  // the initializers
  NamedTensors& buffers() override;     // none: an ONNX graph keeps no state between runs
  NamedTensors& constants() override;   // none: Constant nodes are promoted where they run
  int promote_dtype_arguments(bool on) override;
  std::string first_random_node() const override;
  std::vector<std::string> op_census() const override;
  // The default domain's opset the model imports.
  int64_t opset() const;
  // The model as read (its graph's nodes, initializers and declared inputs).
  const onnx::ModelProto& model_proto() const;
  // A Gather on an initializer (axis 0) with the input as its indices, through Cast and Identity
  // nodes: the initializer's first dimension (formats/onnx/onnx_lookup_tables.cpp).
  std::optional<int64_t> lookup_table_rows(size_t input) const override;

  // Where a leak enters: a group per scope of the node names the exporter writes
  // ("/blocks.0/mix/TopK" runs in blocks.0.mix) and one unit per node.
  const std::vector<ProbeUnit>& units() override;
  c10::IValue run_units(const std::vector<at::Tensor>& user_inputs, const UnitTensors& fed, const UnitTensors& held,
                        std::vector<UnitValues>& values) override;

  // The newest default-domain opset this libonnx knows.
  static int64_t newest_opset();

  // What one run may ask for before it is refused with one line naming the node: no tensor a
  // node makes holds more than max_elements (a dimension of 0 counted as 1, so no shape's sizes
  // multiply past it); one run calls sub-graphs (If's branches, each Loop and Scan iteration) at
  // most max_subgraph_calls times. The defaults are far past any audited model; the fuzzer sets
  // lower ones.
  struct Limits {
    int64_t max_elements = int64_t{1} << 31;
    int64_t max_subgraph_calls = int64_t{1} << 20;
  };
  void set_limits(const Limits& limits);

 private:
  OnnxProgram();
  std::vector<at::Tensor> run_all_with(const std::vector<at::Tensor>& user_inputs, bool check_declared,
                                       UnitRecorder* recorder);
  // One output: the tensor; several: a dict by output name.
  c10::IValue outputs_value(std::vector<at::Tensor> out) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grassaudit::onnx_rt
