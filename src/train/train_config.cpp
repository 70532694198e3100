#include "train/train_config.h"

#include <fmt/format.h>

#include "util/config_json.h"
#include "util/error.h"

namespace grassaudit {

// The one declaration of every training field: JSON key, check, flag (only those
// `grassaudit train` offers; the rest come from the preset or --config), --help text.
const std::vector<Field<TrainConfig>>& train_config_fields() {
  using C = TrainConfig;
  static const std::vector<Field<C>> fields{
      {"tokenizer", &C::tokenizer, one_of({"word", "wordpiece"}), "tokenizer",
       "word | wordpiece (default: the preset's, wordpiece)"},
      {"seq_len", &C::seq_len, at_least(0, "0 = max_len")},
      {"batch", &C::batch, at_least(1)},
      {"epochs", &C::epochs, at_least(1), "epochs", "epochs (sets the LR schedule's length)"},
      {"lr", &C::lr, finite_above(0)},
      {"beta1", &C::beta1, half_open(0, 1)},
      {"beta2", &C::beta2, half_open(0, 1)},
      {"adam_eps", &C::adam_eps, finite_above(0)},
      {"weight_decay", &C::weight_decay, finite_at_least(0)},
      {"warmup_steps", &C::warmup_steps, at_least(0)},
      {"min_lr_ratio", &C::min_lr_ratio, closed_range(0, 1)},
      {"clip", &C::clip, finite_at_least(0, "0 = off")},
      {"seed", &C::seed, any_value(), "seed", "random seed (init, dropout, data order, audit)"},
      {"max_tokens", &C::max_tokens, at_least(0, "0 = no limit"), "max-tokens",
       "stop after this many training tokens (0 = no limit)"},
      {"patience", &C::patience, at_least(0, "0 = off"), "patience",
       "stop when validation perplexity has not improved for K epochs (0 = off; the LR schedule still spans "
       "--epochs)"},
      {"log_every", &C::log_every, at_least(1)},
      {"checkpoint_every", &C::checkpoint_every, at_least(0)},
      {"eval_batch", &C::eval_batch, at_least(1)},
      {"eval_max_tokens", &C::eval_max_tokens, at_least(0)},
      {"audit_trials", &C::audit_trials, at_least(1), "audit-trials", "audit gate trials (default 3)"},
      {"audit_batch", &C::audit_batch, at_least(1)},
      {"loss_impl", &C::loss_impl, one_of({"fused", "materialized"}), "loss-impl",
       "next-token loss: fused (default; chunked, never the whole [B, L, V] logits) | materialized (the full "
       "logits, the reference); the same function, rounding differs"},
  };
  return fields;
}

void TrainConfig::validate(const ModelConfig& model) const {
  check_fields(*this, train_config_fields(), "train");
  // Rules that involve the model.
  auto fail = [](const std::string& msg) { throw InputError("invalid train config: " + msg); };
  const int64_t L = block_len(model);
  if (L < 2) fail(fmt::format("seq_len must be >= 2, got {}", L));
  if (L > model.max_len) fail(fmt::format("seq_len {} exceeds the model's max_len {}", L, model.max_len));
}

nlohmann::json to_json(const TrainConfig& c) { return fields_to_json(c, train_config_fields()); }

TrainConfig train_config_from_json(const nlohmann::json& j, const TrainConfig& base) {
  return fields_from_json(j, train_config_fields(), base, "train");
}

}  // namespace grassaudit
