#include "cli/checkpoint_train_config.h"

#include <fmt/format.h>

#include "util/error.h"

namespace grassaudit::cli {

TrainConfig checkpoint_train_config(const LoadedCheckpoint& ck, const std::string& path) {
  TrainConfig tcfg;
  if (ck.meta.contains("train")) {
    tcfg = train_config_from_json(ck.meta["train"]);
  } else {
    // Not written by grassaudit train: infer the tokenizer from the vocabulary size.
    if (ck.config.vocab_size == 33278) tcfg.tokenizer = "word";
    else if (ck.config.vocab_size == 30522) tcfg.tokenizer = "wordpiece";
    else
      throw InputError(fmt::format("{}: no train config, and vocab_size {} matches neither tokenizer", path,
                                   ck.config.vocab_size));
    tcfg.seq_len = 0;
  }
  tcfg.validate(ck.config);
  return tcfg;
}

}  // namespace grassaudit::cli
