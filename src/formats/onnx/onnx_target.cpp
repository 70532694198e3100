#include "formats/onnx/onnx_target.h"

#include <fmt/format.h>

#include "formats/onnx/onnx_program.h"
#include "formats/onnx/streaming_program.h"
#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {

namespace {

std::unique_ptr<GraphProgram> load_model(const std::string& path, const StreamingOptions& streaming,
                                         const std::vector<InputBinding>& inputs, int64_t time_axis) {
  try {
    std::unique_ptr<onnx_rt::OnnxProgram> program = onnx_rt::OnnxProgram::load(path);
    if (!streaming.active()) return program;
    return std::make_unique<onnx_rt::StreamingProgram>(std::move(program), streaming, inputs, time_axis);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: ONNX model: {}", path, e.what()));
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: ONNX model: {}", path, first_meaningful_line(e.what_without_backtrace())));
  }
}

}  // namespace

OnnxTarget::OnnxTarget(const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis,
                       double feature_scale, const StreamingOptions& streaming)
    : GraphProgramTarget("onnx", path, load_model(path, streaming, inputs, time_axis), inputs, time_axis, feature_scale) {}

}  // namespace grassaudit
