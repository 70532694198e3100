#pragma once
// The SNLI classifier's settings (the model itself: nli/nli_model.h). Saved with every NLI
// checkpoint; unknown keys are errors. Fields are declared once, in nli_config_fields().
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "util/config_fields.h"

namespace grassaudit {

struct NliConfig {
  std::string head = "grassmann";  // grassmann | transformer
  int64_t full_vocab = 30522;      // WordPiece vocabulary size (rows of the id map)
  int64_t vocab_rows = 0;          // embedding rows (set from the training split)
  int64_t max_len = 104;           // position table: 2 * 48 + 3 rounded up to the window
  int64_t d_model = 256;
  int64_t encoder_layers = 1;      // shared self-attention layers after the embeddings
  int64_t heads = 4;               // attention heads (encoder, Transformer head) and mixing heads
  int64_t d_ff = 512;
  double dropout = 0.1;
  int64_t head_layers = 2;         // mixing layers (Grassmann) or attention layers (Transformer)
  int64_t d_proj = 64;             // Grassmann: reduced width, split over `heads`
  int64_t window = 8;
  int64_t stride = 8;              // must equal window (non-overlapping windows)
  double eps = 1e-8;
  int64_t classes = 3;

  void validate() const;  // InputError naming the first bad field
  int64_t rank_per_head() const { return d_proj / heads; }
};

// Every field: JSON key, range check, and the CLI flag for the few `grassaudit train-nli` offers.
const std::vector<Field<NliConfig>>& nli_config_fields();

nlohmann::json to_json(const NliConfig& c);
// Starts from `base` and overrides the keys present; unknown keys are errors.
NliConfig nli_config_from_json(const nlohmann::json& j, NliConfig base = {});

}  // namespace grassaudit
