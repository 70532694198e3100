#pragma once
// The train config a checkpoint was made with, for the commands that read checkpoints (eval,
// generate): its "train" meta, or, for a checkpoint grassaudit train did not write, the
// tokenizer its vocabulary size implies. Validated against the model config.
#include <string>

#include "core/checkpoint.h"
#include "train/train_config.h"

namespace grassaudit::cli {

// InputError naming `path` when there is no train config and the vocabulary size matches
// neither tokenizer (word 33,278; WordPiece 30,522), or the config does not fit the model.
TrainConfig checkpoint_train_config(const LoadedCheckpoint& ck, const std::string& path);

}  // namespace grassaudit::cli
