#include "formats/model_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>

#ifndef GRASSAUDIT_NO_ONNX
#include <onnx/onnx_pb.h>
#endif

#include "formats/export/exported_program_target.h"
#ifndef GRASSAUDIT_NO_ONNX
#include "formats/onnx/onnx_target.h"
#endif
#include "formats/torchscript/torchscript_target.h"
#include "formats/torch/zip_reader.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

namespace {

// The format by content; `other_zip`: a readable zip that is neither format and holds no
// data.pkl (so not a torch.save file either), with a few of its entry names.
std::string format_of(const std::string& path, std::string* other_zip) {
  char magic[4] = {0, 0, 0, 0};
  {
    std::ifstream f(path, std::ios::binary);
    if (!f || !f.read(magic, 4)) return "";
  }
  if (std::string(magic, 4) != std::string("PK\x03\x04", 4)) {
    // An ONNX ModelProto: protobuf writes fields in number order, so a file that starts with
    // ir_version (field 1, varint: the byte 0x08) is one, damaged or not; a model without
    // ir_version is one when it parses as a ModelProto with a graph.
    if (magic[0] == 0x08) return "onnx";
#ifndef GRASSAUDIT_NO_ONNX
    const unsigned char b = static_cast<unsigned char>(magic[0]);
    if ((b & 7) == 2 && (b >> 3) >= 2 && (b >> 3) <= 8) {
      onnx::ModelProto m;
      const std::string bytes = read_file(path);
      if (m.ParseFromString(bytes) && m.has_graph() && m.graph().node_size()) return "onnx";
    }
#endif
    return "";
  }
  std::optional<ZipReader> zip;
  try {
    zip = ZipReader::open(path);
  } catch (const InputError&) {
    return "";
  }
  if (!zip) return "";
  if (zip->find("serialized_exported_program.json") || zip->find("archive_format")) return "torch.export";
  bool code = false;
  for (const auto& e : zip->entries()) code = code || e.name.find("/code/") != std::string::npos;
  if (zip->find("data.pkl") && code) return "torchscript";
  if (other_zip && !zip->find("data.pkl")) {
    std::vector<std::string> names;
    for (size_t i = 0; i < zip->entries().size() && i < 4; ++i) names.push_back(zip->entries()[i].name);
    *other_zip = fmt::format("{} entries: {}{}", zip->entries().size(), fmt::join(names, ", "),
                             zip->entries().size() > 4 ? ", ..." : "");
    if (zip->entries().empty()) *other_zip = "no entries";
  }
  return "";
}

InputError neither_format(const std::string& path, const std::string& other_zip) {
  return InputError(fmt::format("{}: a zip file that is neither a torch.export archive nor TorchScript ({}); save the "
                                "model with torch.export.save or torch.jit.save",
                                path, other_zip));
}

#ifdef GRASSAUDIT_NO_ONNX
InputError no_onnx_reader(const std::string& path) {
  return InputError(fmt::format("{}: an ONNX model, and this grassaudit was built without its ONNX reader "
                                "(-DGRASSAUDIT_ONNX=OFF); use a build with libonnx-dev",
                                path));
}
#endif

}  // namespace

std::string model_file_format(const std::string& path) { return format_of(path, nullptr); }

std::string readable_model_format(const std::string& path) {
  read_file(path);  // missing / directory / unreadable: one-line error naming the path
  std::string other_zip;
  const std::string format = format_of(path, &other_zip);
#ifdef GRASSAUDIT_NO_ONNX
  if (format == "onnx") throw no_onnx_reader(path);
#endif
  if (format.empty() && !other_zip.empty()) throw neither_format(path, other_zip);
  return format.empty() ? "torchscript" : format;
}

std::unique_ptr<ModelFileTarget> open_model_file(const std::string& path, const std::vector<InputBinding>& inputs,
                                                 int64_t time_axis, double feature_scale,
                                                 const StreamingOptions& streaming) {
  read_file(path);  // missing / directory / unreadable: one-line error naming the path
  std::string other_zip;
  const std::string format = format_of(path, &other_zip);
#ifndef GRASSAUDIT_NO_ONNX
  if (format == "onnx") return std::make_unique<OnnxTarget>(path, inputs, time_axis, feature_scale, streaming);
#else
  if (format == "onnx") throw no_onnx_reader(path);
#endif
  if (streaming.active())
    throw InputError(fmt::format("{}: --state is for streaming ONNX models (this file is {})", path,
                                 format.empty() ? "not one" : format));
  for (const auto& b : inputs)
    if (b.kind == InputBinding::Kind::kConst && format != "torch.export")
      throw InputError(fmt::format("{}: --input {}: const inputs are for graph files (ONNX, torch.export)", path, b.str()));
  if (format == "torch.export") return std::make_unique<ExportedProgramTarget>(path, inputs, time_axis, feature_scale);
  if (!other_zip.empty()) throw neither_format(path, other_zip);
  // TorchScript, and everything that is not a format read here: the TorchScript loader's
  // explanation names what the file is (a torch.save file, not a zip, a damaged archive).
  return std::make_unique<TorchScriptTarget>(path, inputs, time_axis, feature_scale);
}

}  // namespace grassaudit
