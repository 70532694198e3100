#include "core/model_config.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "core/token_mixer.h"
#include "util/error.h"

namespace grassaudit {

bool ModelConfig::is_grassmann() const { return mixer != "attention"; }

void ModelConfig::validate() const {
  auto fail = [](const std::string& msg) { throw InputError("invalid model config: " + msg); };
  MixerRegistry::instance().check_name(mixer);
  if (vocab_size < 2) fail(fmt::format("vocab_size must be >= 2, got {}", vocab_size));
  if (d_model < 1) fail(fmt::format("d_model must be >= 1, got {}", d_model));
  if (layers < 1) fail(fmt::format("layers must be >= 1, got {}", layers));
  if (max_len < 2) fail(fmt::format("max_len must be >= 2, got {}", max_len));
  if (d_ff < 1) fail(fmt::format("d_ff must be >= 1, got {}", d_ff));
  if (!(dropout >= 0.0 && dropout < 1.0)) fail(fmt::format("dropout must be in [0, 1), got {}", dropout));
  if (!(eps > 0.0 && std::isfinite(eps))) fail(fmt::format("eps must be finite and > 0, got {}", eps));
  if (mixer == "attention") {
    if (heads < 1) fail(fmt::format("heads must be >= 1, got {}", heads));
    if (d_model % heads != 0)
      fail(fmt::format("d_model ({}) must be divisible by heads ({})", d_model, heads));
    return;
  }
  if (rank < 2) fail(fmt::format("rank must be >= 2 (a 2-plane needs two dimensions), got {}", rank));
  if (offsets.empty()) fail("offsets must not be empty");
  for (int64_t d : offsets) {
    if (d < 1) fail(fmt::format("offsets must be >= 1, got {}", d));
    if (d >= max_len)
      fail(fmt::format("offset {} >= max_len {}: it could never pair two positions", d, max_len));
  }
  if (offset_mode == "per-layer") {
    if (static_cast<int64_t>(offsets.size()) != layers)
      fail(fmt::format("offset_mode per-layer needs one offset per layer: {} offsets for {} layers",
                       offsets.size(), layers));
  } else if (offset_mode != "all") {
    fail(fmt::format("offset_mode must be per-layer or all, got '{}'", offset_mode));
  }
}

std::vector<int64_t> ModelConfig::layer_offsets(int64_t layer) const {
  if (offset_mode == "all") return offsets;
  return {offsets.at(static_cast<size_t>(layer))};
}

nlohmann::json to_json(const ModelConfig& c) {
  return nlohmann::json{{"mixer", c.mixer},     {"vocab_size", c.vocab_size},
                        {"d_model", c.d_model}, {"rank", c.rank},
                        {"layers", c.layers},   {"max_len", c.max_len},
                        {"heads", c.heads},     {"d_ff", c.d_ff},
                        {"dropout", c.dropout}, {"eps", c.eps},
                        {"offsets", c.offsets}, {"offset_mode", c.offset_mode}};
}

ModelConfig model_config_from_json(const nlohmann::json& j, const ModelConfig& base) {
  if (!j.is_object()) throw InputError("model config must be a JSON object");
  ModelConfig c = base;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    try {
      if (k == "mixer") c.mixer = v.get<std::string>();
      else if (k == "vocab_size") c.vocab_size = v.get<int64_t>();
      else if (k == "d_model") c.d_model = v.get<int64_t>();
      else if (k == "rank") c.rank = v.get<int64_t>();
      else if (k == "layers") c.layers = v.get<int64_t>();
      else if (k == "max_len") c.max_len = v.get<int64_t>();
      else if (k == "heads") c.heads = v.get<int64_t>();
      else if (k == "d_ff") c.d_ff = v.get<int64_t>();
      else if (k == "dropout") c.dropout = v.get<double>();
      else if (k == "eps") c.eps = v.get<double>();
      else if (k == "offsets") c.offsets = v.get<std::vector<int64_t>>();
      else if (k == "offset_mode") c.offset_mode = v.get<std::string>();
      else throw InputError(fmt::format("unknown model config key '{}'", k));
    } catch (const nlohmann::json::exception&) {
      throw InputError(fmt::format("model config key '{}' has the wrong type: {}", k, v.dump()));
    }
  }
  return c;
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int64_t> out;
  size_t pos = 0;
  if (text.empty()) throw InputError(fmt::format("{}: empty list", what));
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      throw InputError(fmt::format("{}: '{}' is not a comma-separated list of integers", what, text));
    out.push_back(value);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace grassaudit
