#include "core/model_config.h"

#include <fmt/format.h>

#include "core/token_mixer.h"
#include "util/config_json.h"
#include "util/error.h"
#include "util/parse_number.h"

namespace grassaudit {

// The one declaration of every model field: JSON key, check, flag, --help text.
const std::vector<Field<ModelConfig>>& model_config_fields() {
  using C = ModelConfig;
  static const std::vector<Field<C>> fields{
      // No --mixer here: each command declares its own (train requires it, bench takes a list).
      // The name is checked against the mixer registry in validate().
      {"mixer", &C::mixer, any_value()},
      {"vocab_size", &C::vocab_size, at_least(2), "vocab-size", "vocabulary size V"},
      {"d_model", &C::d_model, at_least(1), "d-model", "model width d"},
      {"rank", &C::rank, at_least(2, "a 2-plane needs two dimensions"), "rank", "Grassmann reduced rank r (>= 2)"},
      {"layers", &C::layers, at_least(1), "layers", "number of blocks N"},
      {"max_len", &C::max_len, at_least(2), "max-len", "position table size L_max (train: also the block length L)"},
      {"heads", &C::heads, at_least(1), "heads", "attention heads"},
      {"d_ff", &C::d_ff, at_least(1), "d-ff", "feed-forward width"},
      {"dropout", &C::dropout, half_open(0, 1), "dropout", "dropout rate"},
      {"eps", &C::eps, finite_above(0), "eps", "Pluecker normalisation floor"},
      {"offsets", &C::offsets, non_empty_at_least(1), "offsets", "pairing offsets, e.g. 1,2,4,8,12,16"},
      {"offset_mode", &C::offset_mode, one_of({"per-layer", "all"}), "offset-mode", "per-layer | all"},
      {"norm", &C::norm, one_of({"post", "pre"}), "norm",
       "LayerNorm placement: post (the paper's, LN(h + f(h))) | pre (h + f(LN(h)))"},
  };
  return fields;
}

bool ModelConfig::is_grassmann() const {
  return MixerRegistry::instance().info(mixer).family == MixerFamily::kGrassmann;
}

void ModelConfig::validate() const {
  MixerRegistry::instance().check_name(mixer);
  check_fields(*this, model_config_fields(), "model");
  // Rules between fields.
  auto fail = [](const std::string& msg) { throw InputError("invalid model config: " + msg); };
  if (!is_grassmann()) {
    if (d_model % heads != 0)
      fail(fmt::format("d_model ({}) must be divisible by heads ({})", d_model, heads));
    return;
  }
  for (int64_t d : offsets)
    if (d >= max_len)
      fail(fmt::format("offset {} >= max_len {}: it could never pair two positions", d, max_len));
  if (offset_mode == "per-layer" && static_cast<int64_t>(offsets.size()) != layers)
    fail(fmt::format("offset_mode per-layer needs one offset per layer: {} offsets for {} layers", offsets.size(),
                     layers));
}

std::vector<int64_t> ModelConfig::layer_offsets(int64_t layer) const {
  if (offset_mode == "all") return offsets;
  return {offsets.at(static_cast<size_t>(layer))};
}

nlohmann::json to_json(const ModelConfig& c) { return fields_to_json(c, model_config_fields()); }

ModelConfig model_config_from_json(const nlohmann::json& j, const ModelConfig& base) {
  return fields_from_json(j, model_config_fields(), base, "model");
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int64_t> out;
  size_t pos = 0;
  if (text.empty()) throw InputError(fmt::format("{}: empty list", what));
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const std::optional<long long> value = parse_whole_integer(item);
    if (!value) throw InputError(fmt::format("{}: '{}' is not a comma-separated list of integers", what, text));
    out.push_back(*value);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace grassaudit
