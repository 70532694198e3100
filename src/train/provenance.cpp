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

}  // namespace grassaudit
