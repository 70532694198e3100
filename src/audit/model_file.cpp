#include "audit/model_file.h"

#include <fmt/format.h>

#include <fstream>

#include "audit/exported_program_target.h"
#include "audit/torchscript_target.h"
#include "audit/zip_reader.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

std::string model_file_format(const std::string& path) {
  char magic[4] = {0, 0, 0, 0};
  {
    std::ifstream f(path, std::ios::binary);
    if (!f || !f.read(magic, 4)) return "";
  }
  if (std::string(magic, 4) != std::string("PK\x03\x04", 4)) return "";
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
  return "";
}

std::unique_ptr<ModelFileTarget> open_model_file(const std::string& path, const std::vector<InputBinding>& inputs,
                                                 int64_t time_axis, double feature_scale) {
  read_file(path);  // missing / directory / unreadable: one-line error naming the path
  const std::string format = model_file_format(path);
  if (format == "torch.export") return std::make_unique<ExportedProgramTarget>(path, inputs, time_axis, feature_scale);
  // TorchScript, and everything that is not a format read here: the TorchScript loader's
  // explanation names what the file is (a torch.save file, not a zip, a damaged archive).
  return std::make_unique<TorchScriptTarget>(path, inputs, time_axis, feature_scale);
}

}  // namespace grassaudit
