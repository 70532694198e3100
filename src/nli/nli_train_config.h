#pragma once
// Optimizer, schedule, data and evaluation settings of grassaudit train-nli (the model's own
// settings are NliConfig, nli_config.h). Saved with every checkpoint; unknown keys are errors.
// Fields are declared once, in nli_train_config_fields().
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "train/adamw_terms.h"
#include "util/config_fields.h"

namespace grassaudit {

struct NliTrainConfig : AdamWTerms {
  int64_t epochs = 2;    // the budget setting of reports/runs/snli-* (2 cores, 6 runs in ~25 min); the paper: 20
  int64_t batch = 32;
  double lr = 1e-3;  // AdamW's peak learning rate
  double warmup_fraction = 0.1;  // of all steps, linear from 0
  double min_lr_ratio = 0.1;     // cosine floor
  double clip = 1.0;             // global gradient-norm clip; 0 = off
  int64_t log_every = 50;
  int64_t eval_batch = 128;
  double holdout = 0.1;          // offline protocol: share of dev held out for selection
  int64_t max_examples = 0;      // > 0: first N pairs of every split
  int64_t max_sentence_tokens = 48;

  void validate() const;  // InputError naming the first bad field
};

// Every field: JSON key, range check, and the CLI flag for the few `grassaudit train-nli` offers.
const std::vector<Field<NliTrainConfig>>& nli_train_config_fields();

nlohmann::json to_json(const NliTrainConfig& c);
// Starts from `base` and overrides the keys present; unknown keys are errors.
NliTrainConfig nli_train_config_from_json(const nlohmann::json& j, NliTrainConfig base = {});

}  // namespace grassaudit
