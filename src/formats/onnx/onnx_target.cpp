#include "formats/onnx/onnx_target.h"

#include <fmt/format.h>

#include "formats/onnx/onnx_program.h"
#include "formats/onnx/streaming_program.h"
#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {

namespace {

// Anything the reader refuses is one line naming the file.
template <class F>
auto named(const std::string& path, F f) {
  try {
    return f();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: ONNX model: {}", path, e.what()));
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: ONNX model: {}", path, first_meaningful_line(e.what_without_backtrace())));
  }
}

std::unique_ptr<GraphProgram> load_model(const std::string& path, const StreamingOptions& streaming,
                                         const std::vector<InputBinding>& inputs, int64_t time_axis) {
  return named(path, [&]() -> std::unique_ptr<GraphProgram> {
    std::unique_ptr<onnx_rt::OnnxProgram> program = onnx_rt::OnnxProgram::load(path);
    if (!streaming.active()) return program;
    return std::make_unique<onnx_rt::StreamingProgram>(std::move(program), streaming, inputs, time_axis);
  });
}

}  // namespace

std::unique_ptr<GraphProgram> load_onnx_program(const std::string& path) {
  return named(path, [&]() -> std::unique_ptr<GraphProgram> { return onnx_rt::OnnxProgram::load(path); });
}

OnnxTarget::OnnxTarget(const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis,
                       double feature_scale, const StreamingOptions& streaming)
    : GraphProgramTarget("onnx", path, load_model(path, streaming, inputs, time_axis), inputs, time_axis, feature_scale) {}

}  // namespace grassaudit
