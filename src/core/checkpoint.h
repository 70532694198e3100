#pragma once
// One archive per checkpoint: model parameters + buffers, optimizer state, the RNG state and a
// JSON "meta" string (resolved model config under "model", plus whatever the trainer adds:
// train config, step, epoch, data position). Written atomically (temporary file, then rename).
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/language_model.h"
#include "util/error.h"

namespace torch {
namespace optim {
class Optimizer;
}
}  // namespace torch

namespace grassaudit {

// The archive both trainers write: "magic", "meta" (JSON string, with a SHA-256 of the weights
// added: the format has no checksum over tensor data, so a flipped byte would load silently),
// "model", "optimizer" (if given) and "rng_state", written atomically; a full disk is an
// InputError, never a crash.
void save_training_archive(const std::string& path, const std::string& magic, const nlohmann::json& meta,
                           torch::nn::Module& module, torch::optim::Optimizer* optimizer);

// Reads an archive save_training_archive wrote with `magic` (`kind` names it in messages, e.g.
// "grassaudit checkpoint"): parses its meta, which must hold "model"; calls build(meta) to
// construct the module (under a CpuRngGuard: initial weights leave the caller's RNG alone);
// loads the stored weights, checking every shape against the built module (Module::load does
// not) and the stored checksum. Any failure, LibTorch's on damaged records included, is one
// InputError line naming the file. Returns the meta.
nlohmann::json load_training_archive(const std::string& path, const std::string& magic, const std::string& kind,
                                     const std::function<torch::nn::Module&(const nlohmann::json& meta)>& build);

// load_training_archive for a model whose config is meta["model"]: read_config parses it and
// validate() checks it (an InputError then reads "<path>: <config_error><why>"), make builds the
// module the weights load into. Loaded: {meta, config, model} (LoadedCheckpoint below).
template <class Loaded, class ReadConfig, class Make>
Loaded load_model_archive(const std::string& path, const std::string& magic, const std::string& kind,
                          const std::string& config_error, ReadConfig read_config, Make make) {
  Loaded out;
  out.meta = load_training_archive(path, magic, kind, [&](const nlohmann::json& meta) -> torch::nn::Module& {
    try {
      out.config = read_config(meta["model"]);
      out.config.validate();
    } catch (const InputError& e) {
      throw InputError(path + ": " + config_error + e.what());
    }
    out.model = make(out.config);
    return *out.model;
  });
  return out;
}

// Restores the optimizer state and the global CPU RNG state of such an archive.
void load_training_state(const std::string& path, const std::string& magic, const std::string& kind,
                         torch::optim::Optimizer& optimizer);

void save_checkpoint(const std::string& path, LanguageModel& model, torch::optim::Optimizer* optimizer,
                     const nlohmann::json& meta);

struct LoadedCheckpoint {
  nlohmann::json meta;  // includes "model" (the config the model was built from)
  ModelConfig config;
  LanguageModel model{nullptr};
};

// Builds the model from the stored config and loads its weights. InputError (naming the file)
// when the file is missing, truncated, corrupt or not a grassaudit checkpoint.
LoadedCheckpoint load_checkpoint(const std::string& path);

// Restores optimizer state and the global CPU RNG state saved with the checkpoint.
void load_optimizer_and_rng(const std::string& path, torch::optim::Optimizer& optimizer);

// SHA-256 over every parameter and buffer (name, shape, dtype, raw bytes) in module order:
// the identity of "the exact weights" the audit ran on.
std::string weights_sha256(torch::nn::Module& module);

// Whether every parameter holds finite numbers. Both trainers refuse to checkpoint weights that
// do not (they could only reproduce the failure on resume). One reduction, one host sync.
bool all_finite(torch::nn::Module& module);

}  // namespace grassaudit
