#pragma once
// Everything the trainer needs beyond the model: data, optimizer, schedule, evaluation and
// audit-gate settings. Saved (resolved) with every checkpoint and as config.json; unknown keys
// in JSON are errors, as for ModelConfig. Fields are declared once, in train_config_fields().
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/model_config.h"
#include "train/adamw_terms.h"

namespace grassaudit {

// Optimizer: AdamW (the moment and decay terms are AdamWTerms'). Weight decay applies to matrices
// and embeddings (dim >= 2), not to biases and LayerNorm gains (the usual GPT-2 / nanoGPT split).
struct TrainConfig : AdamWTerms {
  std::string tokenizer = "wordpiece";  // word | wordpiece
  int64_t seq_len = 0;                  // L of the training blocks; 0 = the model's max_len
  int64_t batch = 32;
  int64_t epochs = 30;
  double lr = 3e-4;  // AdamW's peak learning rate
  // Schedule: linear warmup from 0 to lr over warmup_steps, then cosine decay to
  // lr * min_lr_ratio at the last step of `epochs` epochs. --max-tokens stops early but does not
  // rescale the schedule (so a stopped run resumes bit-exactly).
  int64_t warmup_steps = 1000;
  double min_lr_ratio = 0.1;
  double clip = 1.0;              // global gradient-norm clip; 0 = off
  uint64_t seed = 1234;
  int64_t max_tokens = 0;         // stop once this many training tokens were seen; 0 = no limit
  // Early stopping: stop after `patience` epoch-end validations in a row without a new best
  // validation loss; 0 = off. Only epoch-end validations count, so a run stopped by its time
  // budget (validated mid-epoch) stops at the same epoch as an uninterrupted one.
  int64_t patience = 0;
  int64_t log_every = 50;         // a "train" metrics line every k steps
  int64_t checkpoint_every = 0;   // also write last.ckpt every k steps; 0 = at epoch ends only
  int64_t eval_batch = 32;
  int64_t eval_max_tokens = 0;    // evaluate on the first N tokens of a split; 0 = the whole split
  // The audit gate before every perplexity (seq_len = the training L, both modes).
  int64_t audit_trials = 3;
  int64_t audit_batch = 32;
  // How the next-token loss is computed: "fused" (chunked head + cross-entropy, default) or
  // "materialized" (the full logits). Same function, different rounding. Configs and checkpoints
  // written before this field existed load with the default.
  std::string loss_impl = "fused";

  // InputError with one line naming the first invalid field.
  void validate(const ModelConfig& model) const;
  // The block length actually used.
  int64_t block_len(const ModelConfig& model) const { return seq_len > 0 ? seq_len : model.max_len; }
};

// Every field: JSON key, range check, and the CLI flag for the few `grassaudit train` offers.
const std::vector<Field<TrainConfig>>& train_config_fields();

nlohmann::json to_json(const TrainConfig& c);
// Starts from `base` and overrides the keys present; unknown keys are errors.
TrainConfig train_config_from_json(const nlohmann::json& j, const TrainConfig& base = {});

}  // namespace grassaudit
