#pragma once
// The one place a model file is opened: its format is recognised by its content, never by its
// name, and the target for that format is built. Everything above (the checks, the output-leaf
// audit, the suite runner, the CLI) sees a ModelFileTarget and never names a format.
//
// The formats read (how each is recognised):
//   torchscript   a zip with a data.pkl and code/ records (torch.jit.save)
//   torch.export  a zip with serialized_exported_program.json (torch.export.save, PyTorch 2.6
//                 flat layout), or with archive_format "pt2" and models/*.json (the packaged PT2
//                 archive of PyTorch 2.8+)
//   onnx          an ONNX ModelProto (protobuf; torch.onnx.export, tf2onnx, any exporter)
// Anything else is one line naming what was found (a torch.save file, a zip of something else,
// not a zip at all).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "audit/model_file_target.h"

namespace grassaudit {

// The format of the file at `path` by its content: "torchscript", "torch.export", "onnx", or "" when it
// is neither (open_model_file then says what it is).
std::string model_file_format(const std::string& path);

// The format a reader opens the file at `path` as: "onnx", "torch.export", or "torchscript" (also
// for a file of neither, whose loader says what it is). InputError, one line, when the file is
// missing, a zip of neither format, or ONNX in a build without the ONNX reader.
std::string readable_model_format(const std::string& path);

// Opens the model at `path`. InputError, one line, when the file is missing, of no format read
// here, damaged, or its arguments do not take `inputs`.
std::unique_ptr<ModelFileTarget> open_model_file(const std::string& path, const std::vector<InputBinding>& inputs,
                                                 int64_t time_axis = 1, double feature_scale = 1.0,
                                                 const StreamingOptions& streaming = {});

}  // namespace grassaudit
