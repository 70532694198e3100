#pragma once
// Audit target for an ONNX model (.onnx): the interpreter of formats/onnx/onnx_program.h seen
// through GraphProgramTarget, like a torch.export archive: the graph's inputs bound to --input
// values (in order or by name), time at --time-axis, one output a tensor and several a dict by
// output name (leaves ["logits"], ["state"]).
//
// A streaming model (x_chunk, state...) -> (y, state'...) is run by the StreamingProgram of
// formats/onnx/streaming_program.h when --state pairs are given.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/graph/graph_program_target.h"
#include "audit/model_file_target.h"

namespace grassaudit {

// The ONNX model at `path` as a graph (one step of a streaming model, its states among its
// inputs); InputError, one line naming the path, when it cannot be read or run.
std::unique_ptr<GraphProgram> load_onnx_program(const std::string& path);

class OnnxTarget : public GraphProgramTarget {
 public:
  // InputError (one line naming the path) when the model cannot be read or run, or its inputs do
  // not take `inputs`.
  OnnxTarget(const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis = 1,
             double feature_scale = 1.0, const StreamingOptions& streaming = {});
};

}  // namespace grassaudit
