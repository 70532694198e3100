#include "train/provenance.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include "core/row_dropout.h"
#include "core/runtime.h"
#include "util/build_info.h"
#include "util/command_line.h"

namespace grassaudit {

nlohmann::json run_provenance(const ProvenanceInputs& in) {
  nlohmann::json data = nlohmann::json::object();
  for (const auto& [path, hex] : in.data_sha256) data[path] = hex;
  return nlohmann::json{{"git_commit", build_git_commit()},
                        {"git_dirty", build_git_dirty()},
                        {"grassaudit_version", grassaudit_version()},
                        {"libtorch_version", TORCH_VERSION},
                        {"blas", blas_in_use()},
                        {"threads", at::get_num_threads()},
                        {"blas_threads", blas_threads()},
                        {"world_size", in.world_size},
                        {"device", in.device},
                        {"precision", in.precision},
                        {"dropout_masks", kDropoutMaskRule},
                        {"command_line", command_line()},
                        {"data_sha256", data}};
}

nlohmann::json session_record(const ProvenanceInputs& in, int64_t first_step, int64_t last_step) {
  return nlohmann::json{{"first_step", first_step},
                        {"last_step", last_step},
                        {"git_commit", build_git_commit()},
                        {"git_dirty", build_git_dirty()},
                        {"grassaudit_version", grassaudit_version()},
                        {"world_size", in.world_size},
                        {"threads", at::get_num_threads()},
                        {"device", in.device},
                        {"precision", in.precision},
                        {"command_line", command_line()}};
}

nlohmann::json earlier_sessions(const nlohmann::json* meta, int64_t resume_step) {
  if (!meta) return nlohmann::json::array();
  auto it = meta->find("sessions");
  if (it != meta->end() && it->is_array()) return *it;
  return nlohmann::json::array({{{"first_step", 0}, {"last_step", resume_step}, {"recorded", false}}});
}

}  // namespace grassaudit
