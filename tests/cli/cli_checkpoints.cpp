#include "cli_checkpoints.h"

#include <ATen/ATen.h>
#include <torch/serialize/output-archive.h>

#include <nlohmann/json.hpp>

#include "core/checkpoint.h"
#include "nli/nli_checkpoint.h"
#include "train/train_config.h"
#include "util/error.h"

namespace grassaudit::clitest {
namespace {

ModelConfig config_of(const TinyModel& m) {
  ModelConfig c;
  c.mixer = m.mixer;
  c.vocab_size = m.vocab_size;
  c.d_model = m.d_model;
  c.rank = 4;
  c.layers = m.layers;
  c.max_len = m.max_len;
  c.heads = 2;
  c.d_ff = 32;
  c.offsets = {1, 2};
  c.validate();
  return c;
}

}  // namespace

void write_tiny_checkpoint(const std::string& path, const TinyModel& m, const std::string& tokenizer) {
  at::manual_seed(7);
  LanguageModel model(config_of(m));
  nlohmann::json meta = nlohmann::json::object();
  if (!tokenizer.empty()) {
    TrainConfig t;
    t.tokenizer = tokenizer;
    t.seq_len = m.max_len;
    t.audit_trials = 1;
    t.eval_max_tokens = 512;
    meta["train"] = to_json(t);
  }
  save_checkpoint(path, model, nullptr, meta);
}

void write_mismatched_checkpoint(const std::string& path, const TinyModel& claimed, const TinyModel& actual) {
  at::manual_seed(7);
  LanguageModel model(config_of(actual));
  torch::serialize::OutputArchive archive;
  archive.write("magic", c10::IValue(std::string("grassaudit-checkpoint-v1")));
  archive.write("meta", c10::IValue(nlohmann::json{{"model", to_json(config_of(claimed))}}.dump()));
  torch::serialize::OutputArchive model_archive;
  model->save(model_archive);
  archive.write("model", model_archive);
  archive.save_to(path);
}

void write_checkpoint_with_meta(const std::string& path, const std::string& meta) {
  torch::serialize::OutputArchive archive;
  archive.write("magic", c10::IValue(std::string("grassaudit-checkpoint-v1")));
  if (!meta.empty()) archive.write("meta", c10::IValue(meta));
  archive.save_to(path);
}

bool checkpoint_loads(const std::string& path, std::string* why, bool* all_finite) {
  try {
    LoadedCheckpoint ck = load_checkpoint(path);
    if (all_finite) {
      *all_finite = true;
      for (const auto& p : ck.model->parameters()) *all_finite = *all_finite && at::isfinite(p).all().item<bool>();
    }
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

// The weights hash of what `load` reads from `path`, or "" when it does not load.
template <class Load>
std::string hash_of_loaded(const std::string& path, Load load) {
  try {
    auto ck = load(path);
    return weights_sha256(*ck.model);
  } catch (const InputError&) {
    return "";
  }
}

std::string loaded_weights_hash(const std::string& path) { return hash_of_loaded(path, load_checkpoint); }

std::string loaded_nli_weights_hash(const std::string& path) { return hash_of_loaded(path, load_nli_checkpoint); }

}  // namespace grassaudit::clitest
