#include "formats/model_inputs.h"

#include <torch/csrc/jit/api/module.h>

#include <set>

#include "formats/export/exported_program_target.h"
#include "formats/graph/graph_input_inference.h"
#include "formats/input_findings.h"
#include "formats/model_file.h"
#ifndef GRASSAUDIT_NO_ONNX
#include "formats/onnx/onnx_target.h"
#endif
#include "formats/torchscript/torchscript_input_inference.h"
#include "formats/torchscript/torchscript_target.h"

namespace grassaudit {

std::vector<InputBinding> infer_model_inputs(const std::string& path, int64_t time_axis,
                                             const StreamingOptions& streaming) {
  const std::string format = readable_model_format(path);
  std::vector<InputFinding> findings;
  if (format == "onnx" || format == "torch.export") {
#ifndef GRASSAUDIT_NO_ONNX
    std::unique_ptr<GraphProgram> program = format == "onnx" ? load_onnx_program(path) : load_export_archive(path);
#else
    std::unique_ptr<GraphProgram> program = load_export_archive(path);  // readable_model_format refused ONNX
#endif
    std::set<std::string> states;
    for (const auto& [in, out] : streaming.state) states.insert(in);
    findings = find_graph_inputs(*program, time_axis, states);
  } else {
    findings = find_torchscript_inputs(*load_torchscript_module(path), time_axis);
  }
  return conclude_inputs(path, findings);
}

}  // namespace grassaudit
