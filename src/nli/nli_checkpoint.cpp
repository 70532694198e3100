#include "nli/nli_checkpoint.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/optim/optimizer.h>

#include "core/checkpoint.h"
#include "util/error.h"

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
  LoadedNliCheckpoint out;
  out.meta = load_training_archive(path, kMagic, kKind, [&](const nlohmann::json& meta) -> torch::nn::Module& {
    try {
      out.config = nli_config_from_json(meta["model"]);
      out.config.validate();
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", path, e.what()));
    }
    out.model = NliModel(out.config, at::zeros({out.config.full_vocab}, at::kLong));
    return *out.model;
  });
  return out;
}

void load_nli_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer) {
  load_training_state(path, kMagic, kKind, optimizer);
}

}  // namespace grassaudit
