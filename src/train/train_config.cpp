#include "train/train_config.h"

#include <cmath>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace grassaudit {

void TrainConfig::validate(const ModelConfig& model) const {
  auto fail = [](const std::string& msg) { throw InputError("invalid train config: " + msg); };
  if (tokenizer != "word" && tokenizer != "wordpiece")
    fail(fmt::format("tokenizer must be word or wordpiece, got '{}'", tokenizer));
  const int64_t L = block_len(model);
  if (seq_len < 0) fail(fmt::format("seq_len must be >= 0 (0 = max_len), got {}", seq_len));
  if (L < 2) fail(fmt::format("seq_len must be >= 2, got {}", L));
  if (L > model.max_len) fail(fmt::format("seq_len {} exceeds the model's max_len {}", L, model.max_len));
  if (batch < 1) fail(fmt::format("batch must be >= 1, got {}", batch));
  if (epochs < 1) fail(fmt::format("epochs must be >= 1, got {}", epochs));
  if (!(lr > 0 && std::isfinite(lr))) fail(fmt::format("lr must be finite and > 0, got {}", lr));
  if (!(beta1 >= 0 && beta1 < 1)) fail(fmt::format("beta1 must be in [0, 1), got {}", beta1));
  if (!(beta2 >= 0 && beta2 < 1)) fail(fmt::format("beta2 must be in [0, 1), got {}", beta2));
  if (!(adam_eps > 0 && std::isfinite(adam_eps))) fail(fmt::format("adam_eps must be finite and > 0, got {}", adam_eps));
  if (!(weight_decay >= 0 && std::isfinite(weight_decay)))
    fail(fmt::format("weight_decay must be finite and >= 0, got {}", weight_decay));
  if (warmup_steps < 0) fail(fmt::format("warmup_steps must be >= 0, got {}", warmup_steps));
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1))
    fail(fmt::format("min_lr_ratio must be in [0, 1], got {}", min_lr_ratio));
  if (!(clip >= 0 && std::isfinite(clip))) fail(fmt::format("clip must be finite and >= 0 (0 = off), got {}", clip));
  if (max_tokens < 0) fail(fmt::format("max_tokens must be >= 0 (0 = no limit), got {}", max_tokens));
  if (log_every < 1) fail(fmt::format("log_every must be >= 1, got {}", log_every));
  if (checkpoint_every < 0) fail(fmt::format("checkpoint_every must be >= 0, got {}", checkpoint_every));
  if (eval_batch < 1) fail(fmt::format("eval_batch must be >= 1, got {}", eval_batch));
  if (eval_max_tokens < 0) fail(fmt::format("eval_max_tokens must be >= 0, got {}", eval_max_tokens));
  if (audit_trials < 1) fail(fmt::format("audit_trials must be >= 1, got {}", audit_trials));
  if (audit_batch < 1) fail(fmt::format("audit_batch must be >= 1, got {}", audit_batch));
}

nlohmann::json to_json(const TrainConfig& c) {
  return nlohmann::json{{"tokenizer", c.tokenizer},
                        {"seq_len", c.seq_len},
                        {"batch", c.batch},
                        {"epochs", c.epochs},
                        {"lr", c.lr},
                        {"beta1", c.beta1},
                        {"beta2", c.beta2},
                        {"adam_eps", c.adam_eps},
                        {"weight_decay", c.weight_decay},
                        {"warmup_steps", c.warmup_steps},
                        {"min_lr_ratio", c.min_lr_ratio},
                        {"clip", c.clip},
                        {"seed", c.seed},
                        {"max_tokens", c.max_tokens},
                        {"log_every", c.log_every},
                        {"checkpoint_every", c.checkpoint_every},
                        {"eval_batch", c.eval_batch},
                        {"eval_max_tokens", c.eval_max_tokens},
                        {"audit_trials", c.audit_trials},
                        {"audit_batch", c.audit_batch}};
}

TrainConfig train_config_from_json(const nlohmann::json& j, const TrainConfig& base) {
  if (!j.is_object()) throw InputError("train config must be a JSON object");
  TrainConfig c = base;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    auto integer = [&]() -> int64_t {
      if (!v.is_number_integer())
        throw InputError(fmt::format("train config key '{}' must be an integer, got {}", k, v.dump()));
      return v.get<int64_t>();
    };
    try {
      if (k == "tokenizer") c.tokenizer = v.get<std::string>();
      else if (k == "seq_len") c.seq_len = integer();
      else if (k == "batch") c.batch = integer();
      else if (k == "epochs") c.epochs = integer();
      else if (k == "lr") c.lr = v.get<double>();
      else if (k == "beta1") c.beta1 = v.get<double>();
      else if (k == "beta2") c.beta2 = v.get<double>();
      else if (k == "adam_eps") c.adam_eps = v.get<double>();
      else if (k == "weight_decay") c.weight_decay = v.get<double>();
      else if (k == "warmup_steps") c.warmup_steps = integer();
      else if (k == "min_lr_ratio") c.min_lr_ratio = v.get<double>();
      else if (k == "clip") c.clip = v.get<double>();
      else if (k == "seed") {
        if (!v.is_number_unsigned())
          throw InputError(fmt::format("train config key 'seed' must be a non-negative integer, got {}", v.dump()));
        c.seed = v.get<uint64_t>();
      } else if (k == "max_tokens") c.max_tokens = integer();
      else if (k == "log_every") c.log_every = integer();
      else if (k == "checkpoint_every") c.checkpoint_every = integer();
      else if (k == "eval_batch") c.eval_batch = integer();
      else if (k == "eval_max_tokens") c.eval_max_tokens = integer();
      else if (k == "audit_trials") c.audit_trials = integer();
      else if (k == "audit_batch") c.audit_batch = integer();
      else throw InputError(fmt::format("unknown train config key '{}'", k));
    } catch (const nlohmann::json::exception&) {
      throw InputError(fmt::format("train config key '{}' has the wrong type: {}", k, v.dump()));
    }
  }
  return c;
}

}  // namespace grassaudit
