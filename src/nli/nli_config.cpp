#include "nli/nli_config.h"

#include <fmt/format.h>

#include "util/config_json.h"
#include "util/error.h"

namespace grassaudit {

// The one declaration of every NLI model field: JSON key, check, flag, --help text.
const std::vector<Field<NliConfig>>& nli_config_fields() {
  using C = NliConfig;
  static const std::vector<Field<C>> fields{
      {"head", &C::head, one_of({"grassmann", "transformer"}), "head", "classification head: grassmann | transformer"},
      {"full_vocab", &C::full_vocab, at_least(5)},
      {"vocab_rows", &C::vocab_rows, at_least(0)},
      {"max_len", &C::max_len, at_least(8)},
      {"d_model", &C::d_model, at_least(1)},
      {"encoder_layers", &C::encoder_layers, at_least(0), "encoder-layers",
       "self-attention layers in the shared encoder (default 1)"},
      {"heads", &C::heads, at_least(1)},
      {"d_ff", &C::d_ff, at_least(1)},
      {"dropout", &C::dropout, half_open(0, 1)},
      {"head_layers", &C::head_layers, at_least(1)},
      {"d_proj", &C::d_proj, at_least(2)},
      {"window", &C::window, at_least(2)},
      {"stride", &C::stride, at_least(2)},
      {"eps", &C::eps, finite_above(0)},
      {"classes", &C::classes, at_least(2)},
  };
  return fields;
}

void NliConfig::validate() const {
  check_fields(*this, nli_config_fields(), "NLI model");
  // Rules between fields.
  auto fail = [](const std::string& msg) { throw InputError("invalid NLI model config: " + msg); };
  if (d_model % heads != 0) fail(fmt::format("heads ({}) must divide d_model ({})", heads, d_model));
  if (d_proj % heads != 0 || d_proj / heads < 2)
    fail(fmt::format("d_proj ({}) must split into {} heads of rank >= 2", d_proj, heads));
  if (stride != window)
    fail(fmt::format("stride ({}) must equal window ({}): only non-overlapping windows", stride, window));
}

nlohmann::json to_json(const NliConfig& c) { return fields_to_json(c, nli_config_fields()); }

NliConfig nli_config_from_json(const nlohmann::json& j, NliConfig base) {
  return fields_from_json(j, nli_config_fields(), std::move(base), "NLI model");
}

}  // namespace grassaudit
