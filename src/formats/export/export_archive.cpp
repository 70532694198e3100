#include "formats/export/export_graph.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "formats/torch/torch2_ops.h"
#include "formats/torch/weights_unpickler.h"
#include "formats/torch/zip_reader.h"
#include "util/error.h"
#include "util/error_text.h"

// The archive: its two layouts (flat, PyTorch 2.6; packaged PT2, 2.8+), their weights and
// constants, and the program they hold.
namespace grassaudit {

using namespace exported;

namespace {

// A tensor stored raw (the packaged layout): dtype, sizes, strides and offset from its TensorMeta.
at::Tensor raw_tensor(const std::string& blob, const json& meta, const std::string& what) {
  const at::ScalarType dtype = scalar_type(field(meta, "dtype", what).get<int64_t>());
  auto ints = [&](const char* key) {
    std::vector<int64_t> out;
    for (const auto& s : field(meta, key, what)) {
      auto [k, v] = kind_of(s, "a size");
      if (k != "as_int") throw InputError(fmt::format("{}: a symbolic {} in a stored tensor", what, key));
      out.push_back(v->get<int64_t>());
    }
    return out;
  };
  const auto sizes = ints("sizes"), strides = ints("strides");
  int64_t offset = 0;
  if (meta.contains("storage_offset")) {
    auto [k, v] = kind_of(meta.at("storage_offset"), "a storage offset");
    if (k == "as_int") offset = v->get<int64_t>();
  }
  const auto esize = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t numel = static_cast<int64_t>(blob.size()) / esize;
  if (sizes.size() != strides.size() || offset < 0) throw InputError(fmt::format("{}: inconsistent tensor metadata", what));
  int64_t last = offset;
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) throw InputError(fmt::format("{}: a negative size or stride", what));
    if (sizes[d] == 0) empty = true;
    else if (sizes[d] > 1 && strides[d] > (INT64_MAX / 2 - last) / (sizes[d] - 1))
      throw InputError(fmt::format("{}: a tensor larger than memory", what));
    else last += (sizes[d] - 1) * strides[d];
  }
  if (!empty && last >= numel)
    throw InputError(fmt::format("{}: [{}] needs more than the {} bytes stored", what, fmt::join(sizes, ", "), blob.size()));
  at::Tensor storage = at::empty({numel}, at::TensorOptions().dtype(dtype));
  if (numel > 0) std::memcpy(storage.data_ptr(), blob.data(), static_cast<size_t>(numel * esize));
  return storage.as_strided(sizes, strides, offset);
}

std::map<std::string, at::Tensor> read_payloads(const ZipReader& zip, const std::string& config_path,
                                                const std::string& dir, const std::string& what) {
  std::map<std::string, at::Tensor> out;
  if (!zip.find(config_path)) return out;
  json config;
  try {
    config = json::parse(zip.read(config_path));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: {}", config_path, e.what()));
  }
  for (const auto& [fqn, meta] : field(config, "config", config_path).items()) {
    const std::string path = dir + field(meta, "path_name", config_path).get<std::string>();
    const std::string blob = zip.read(path);
    const std::string where = fmt::format("{} '{}' ({})", what, fqn, path);
    if (meta.value("use_pickle", false)) out[fqn] = read_saved_tensor(blob, where);
    else if (meta.contains("tensor_meta") && !meta["tensor_meta"].is_null()) out[fqn] = raw_tensor(blob, meta["tensor_meta"], where);
    else throw InputError(fmt::format("{}: neither a tensor nor a pickle (a TorchBind object?): not read", where));
  }
  return out;
}

}  // namespace

std::unique_ptr<ExportedProgram> ExportedProgram::load(const std::string& path) {
  ensure_torch2_ops();  // the 2.x ops this LibTorch lacks, registered as for TorchScript files
  std::unique_ptr<ExportedProgram> ep(new ExportedProgram());
  Impl& im = *ep->impl_;
  auto zip = ZipReader::open(path);
  if (!zip) throw InputError("a zip file whose directory cannot be read (truncated or damaged?)");
  json program;
  std::map<std::string, at::Tensor> state, consts;
  auto parse_json = [](const std::string& text, const std::string& what) {
    try {
      return json::parse(quote_nonfinite(text));
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{} is not valid JSON: {}", what, first_meaningful_line(e.what())));
    }
  };
  if (zip->find("serialized_exported_program.json")) {
    im.layout = "flat";
    if (zip->find("version")) {
      const std::string v = trim(zip->read("version"));
      if (v.rfind("8.", 0) != 0)
        throw InputError(fmt::format("a torch.export archive of schema version {}, which grassaudit does not read (it "
                                     "reads 8.x: PyTorch 2.5 to 2.9)",
                                     v.substr(0, 32)));
    }
    program = parse_json(zip->read("serialized_exported_program.json"), "serialized_exported_program.json");
    for (auto& [k, t] : read_saved_tensor_dict(zip->find("serialized_state_dict.pt") ? zip->read("serialized_state_dict.pt") : "",
                                               "serialized_state_dict.pt"))
      state[k] = t;
    for (auto& [k, t] : read_saved_tensor_dict(zip->find("serialized_constants.pt") ? zip->read("serialized_constants.pt") : "",
                                               "serialized_constants.pt"))
      consts[k] = t;
  } else if (zip->find("archive_format")) {
    im.layout = "packaged";
    const std::string format = trim(zip->read("archive_format"));
    if (format != "pt2")
      throw InputError(fmt::format("an archive of format '{}', which grassaudit does not read (it reads 'pt2')",
                                   format.substr(0, 32)));
    if (zip->find("archive_version")) {
      const std::string v = trim(zip->read("archive_version"));
      if (v != "0")
        throw InputError(fmt::format("a PT2 archive of version {}, which grassaudit does not read (it reads version 0, "
                                     "the published PT2 archive spec)",
                                     v.substr(0, 32)));
    }
    std::vector<std::string> models;
    const std::string prefix = zip->root().empty() ? "models/" : zip->root() + "/models/";
    for (const auto& e : zip->entries())
      if (e.name.rfind(prefix, 0) == 0 && e.name.size() > prefix.size() + 5 &&
          e.name.compare(e.name.size() - 5, 5, ".json") == 0 && e.name.find('/', prefix.size()) == std::string::npos)
        models.push_back(e.name.substr(prefix.size(), e.name.size() - prefix.size() - 5));
    if (models.empty()) throw InputError("a PT2 archive without a model (no models/*.json): an AOTInductor package?");
    std::string model = models[0];
    if (models.size() > 1) {
      if (std::find(models.begin(), models.end(), "model") == models.end())
        throw InputError(fmt::format("a PT2 archive of {} models ({}): grassaudit audits one; save one model per file",
                                     models.size(), fmt::join(models, ", ")));
      model = "model";
    }
    program = parse_json(zip->read("models/" + model + ".json"), "models/" + model + ".json");
    if (!program.contains("graph_module"))
      throw InputError(fmt::format("models/{}.json is not a serialized ExportedProgram (no graph_module)", model));
    state = read_payloads(*zip, "data/weights/" + model + "_weights_config.json", "data/weights/", "weight");
    if (state.empty())
      state = read_payloads(*zip, "data/weights/" + model + "_model_param_config.json", "data/weights/", "weight");
    consts = read_payloads(*zip, "data/constants/" + model + "_constants_config.json", "data/constants/", "constant");
    if (consts.empty())
      consts = read_payloads(*zip, "data/constants/" + model + "_model_constants_config.json", "data/constants/",
                             "constant");
  } else {
    throw InputError("a zip file that is not a torch.export archive");
  }
  try {
    im.parse_program(program, state, consts);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("the serialized ExportedProgram ({}) is malformed: {}", im.producer,
                                 first_meaningful_line(e.what())));
  }
  return ep;
}

}  // namespace grassaudit
