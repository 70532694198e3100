#include "train/provenance.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include "core/row_dropout.h"
#include "runtime/runtime.h"
#include "util/build_info.h"
#include "util/command_line.h"

namespace grassaudit {

namespace {

// What a run and each of its sessions both name: the code, the process layout and the command.
nlohmann::json code_and_command(const ProvenanceInputs& in) {
  return nlohmann::json{{"git_commit", build_git_commit()},
                        {"git_dirty", build_git_dirty()},
                        {"grassaudit_version", grassaudit_version()},
                        {"threads", at::get_num_threads()},
                        {"world_size", in.world_size},
                        {"device", in.device},
                        {"precision", in.precision},
                        {"cpu", machine_description()},
                        {"command_line", command_line()}};
}

}  // namespace

nlohmann::json run_provenance(const ProvenanceInputs& in) {
  nlohmann::json data = nlohmann::json::object();
  for (const auto& [path, hex] : in.data_sha256) data[path] = hex;
  nlohmann::json p = code_and_command(in);
  p["libtorch_version"] = TORCH_VERSION;
  p["blas"] = blas_in_use();
  // A CUDA run names its GPU (model, memory, CUDA and cuDNN versions, TF32, cuBLAS): the host's
  // BLAS above ran only the CPU's share (data loading, the gate's float64 passes on the CPU).
  if (in.device.rfind("cuda", 0) == 0) p["gpu"] = gpu_description();
  p["blas_core"] = blas_core();  // the kernel family, and who chose it (cli/main.cpp)
  p["blas_core_source"] = blas_core_source();
  p["blas_threads"] = blas_threads();
  p["dropout_masks"] = kDropoutMaskRule;
  p["data_sha256"] = data;
  return p;
}

nlohmann::json session_record(const ProvenanceInputs& in, int64_t first_step, int64_t last_step) {
  nlohmann::json s = code_and_command(in);
  s["first_step"] = first_step;
  s["last_step"] = last_step;
  return s;
}

nlohmann::json earlier_sessions(const nlohmann::json* meta, int64_t resume_step) {
  if (!meta) return nlohmann::json::array();
  auto it = meta->find("sessions");
  if (it != meta->end() && it->is_array()) return *it;
  return nlohmann::json::array({{{"first_step", 0}, {"last_step", resume_step}, {"recorded", false}}});
}

}  // namespace grassaudit
