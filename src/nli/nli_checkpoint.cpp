#include "nli/nli_checkpoint.h"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

#include "core/checkpoint.h"

namespace grassaudit {
namespace {
constexpr const char* kMagic = "grassaudit-nli-checkpoint-v1";
constexpr const char* kKind = "grassaudit NLI checkpoint";
}  // namespace

void save_nli_checkpoint(const std::string& path, NliModel& model, torch::optim::Optimizer* optimizer,
                         const nlohmann::json& meta_in) {
  nlohmann::json meta = meta_in;
  meta["model"] = to_json(model->config());
  save_training_archive(path, kMagic, meta, *model, optimizer);
}

LoadedNliCheckpoint load_nli_checkpoint(const std::string& path) {
  return load_model_archive<LoadedNliCheckpoint>(
      path, kMagic, kKind, "", [](const nlohmann::json& j) { return nli_config_from_json(j); },
      [](const NliConfig& config) { return NliModel(config, at::zeros({config.full_vocab}, at::kLong)); });
}

void load_nli_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer) {
  load_training_state(path, kMagic, kKind, optimizer);
}

}  // namespace grassaudit
