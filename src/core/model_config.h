#pragma once
// One config struct for the language model, passed whole (nanoGPT style). Validated once;
// printed and saved with every checkpoint; unknown keys in JSON are errors. Its fields are
// declared once, in model_config_fields(): JSON, range checks and the model flags come from there.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "util/config_fields.h"

namespace grassaudit {

struct ModelConfig {
  std::string mixer = "past";  // registry name: future | past | attention | literal-*
  int64_t vocab_size = 30522;
  int64_t d_model = 256;
  int64_t rank = 32;       // r: reduced rank of the Grassmann layer
  int64_t layers = 6;
  int64_t max_len = 128;   // L_max: size of the learned position table
  int64_t heads = 4;       // attention heads (attention mixers only; must be >= 1 for every mixer)
  int64_t d_ff = 1024;
  double dropout = 0.1;
  double eps = 1e-8;       // Pluecker normalisation: p / max(||p||, eps)
  std::vector<int64_t> offsets{1, 2, 4, 8, 12, 16};
  std::string offset_mode = "per-layer";  // per-layer | all
  // Where each sublayer's LayerNorm sits. post (the paper's, the original Transformer's):
  // LN(h + f(h)); pre (GPT-2's): h + f(LN(h)). The same LayerNorm modules (same checkpoint
  // keys) in both; only where they apply differs. See BlockImpl and the two mixers.
  std::string norm = "post";
  bool pre_norm() const { return norm == "pre"; }

  // Throws InputError with one line naming the first invalid field: the mixer name, then the
  // table's checks in table order, then the rules between fields (offsets vs max_len, ...).
  void validate() const;
  // The offsets layer `layer` pairs with (Grassmann mixers only).
  std::vector<int64_t> layer_offsets(int64_t layer) const;
  bool is_grassmann() const;
};

// Every field: JSON key, range check, CLI flag (--d-model, ...; none for mixer) and help.
const std::vector<Field<ModelConfig>>& model_config_fields();

nlohmann::json to_json(const ModelConfig& c);
// Starts from `base` and overrides the keys present; unknown keys are errors.
ModelConfig model_config_from_json(const nlohmann::json& j, const ModelConfig& base = {});

// Parses "1,2,4" into {1,2,4}; InputError on anything else.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what);

}  // namespace grassaudit
