#pragma once
// Named model + training settings. The mixer is not part of a preset (--mixer chooses it), so
// the three mixers train under identical settings. The vocabulary size is set from the
// tokenizer at run time.
#include <string>
#include <vector>

#include "core/model_config.h"
#include "train/train_config.h"

namespace grassaudit {

struct Preset {
  std::string name;
  std::string summary;
  ModelConfig model;
  TrainConfig train;
};

// InputError listing the valid names when `name` is unknown.
Preset get_preset(const std::string& name);
std::vector<std::string> preset_names();

}  // namespace grassaudit
