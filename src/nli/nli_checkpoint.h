#pragma once
// NLI checkpoints: the model (parameters + the id -> row map buffer), optimizer state, the global
// CPU RNG state and a JSON "meta" string holding the model config under "model" and the trainer's
// state. Written atomically (util/atomic_file.h). A separate magic from the LM checkpoints, so
// neither loader accepts the other's files.
#include <string>

#include <nlohmann/json.hpp>

#include "nli/nli_model.h"

namespace torch::optim {
class Optimizer;
}

namespace grassaudit {

void save_nli_checkpoint(const std::string& path, NliModel& model, torch::optim::Optimizer* optimizer,
                         const nlohmann::json& meta);

struct LoadedNliCheckpoint {
  nlohmann::json meta;
  NliConfig config;
  NliModel model{nullptr};
};

// InputError naming the file when it is missing, unreadable, not an NLI checkpoint, or its
// weights do not match the stored config. Keeps the global RNG state unchanged.
LoadedNliCheckpoint load_nli_checkpoint(const std::string& path);

// Restores the optimizer state and the global CPU RNG state.
void load_nli_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer);

}  // namespace grassaudit
