#include "nli/nli_train_config.h"

#include "util/config_json.h"

namespace grassaudit {

// The one declaration of every NLI training field: JSON key, check, flag, --help text.
const std::vector<Field<NliTrainConfig>>& nli_train_config_fields() {
  using C = NliTrainConfig;
  static const std::vector<Field<C>> fields{
      {"epochs", &C::epochs, at_least(1), "epochs", "epochs (default 2, the budget setting; the paper: 20)"},
      {"batch", &C::batch, at_least(1), "batch", "batch size (default 32)"},
      {"lr", &C::lr, finite_above(0), "lr", "peak learning rate (default 1e-3; warmup 10%, cosine to 10%)"},
      {"beta1", &C::beta1, half_open(0, 1)},
      {"beta2", &C::beta2, half_open(0, 1)},
      {"adam_eps", &C::adam_eps, finite_above(0)},
      {"weight_decay", &C::weight_decay, finite_at_least(0)},
      {"warmup_fraction", &C::warmup_fraction, half_open(0, 1)},
      {"min_lr_ratio", &C::min_lr_ratio, closed_range(0, 1)},
      {"clip", &C::clip, finite_at_least(0, "0 = off")},
      {"log_every", &C::log_every, at_least(1), "log-every", "a train metrics line every k steps (default 50)"},
      {"eval_batch", &C::eval_batch, at_least(1)},
      {"holdout", &C::holdout, open_range(0, 1)},
      {"max_examples", &C::max_examples, at_least(0, "0 = all"), "max-examples",
       "keep the first N pairs of every split (smoke runs)"},
      {"max_sentence_tokens", &C::max_sentence_tokens, at_least(1)},
  };
  return fields;
}

void NliTrainConfig::validate() const { check_fields(*this, nli_train_config_fields(), "NLI train"); }

nlohmann::json to_json(const NliTrainConfig& c) { return fields_to_json(c, nli_train_config_fields()); }

NliTrainConfig nli_train_config_from_json(const nlohmann::json& j, NliTrainConfig base) {
  return fields_from_json(j, nli_train_config_fields(), std::move(base), "NLI train");
}

}  // namespace grassaudit
