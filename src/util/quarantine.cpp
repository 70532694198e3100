#include "util/quarantine.h"

#include "util/error.h"
#include "util/string_affix.h"

namespace grassaudit {
namespace {

bool is_ppl_key(const std::string& key) {
  return ends_with(key, "ppl") || key.find("perplexity") != std::string::npos;
}

}  // namespace

void check_ppl_keys(const nlohmann::json& value, const std::string& verdict, const std::string& where) {
  if (value.is_array()) {
    for (const auto& e : value) check_ppl_keys(e, verdict, where);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& key = it.key();
    if (is_ppl_key(key)) {
      const bool quarantined = starts_with(key, "quarantined_");
      if (verdict == "leaky" && !quarantined) {
        throw InputError(where + ": malformed artifact: audit verdict is leaky but '" + key +
                         "' is a plain perplexity key (leaky runs must use 'quarantined_" + key +
                         "')");
      }
      if (verdict == "causal" && quarantined) {
        throw InputError(where + ": malformed artifact: audit verdict is causal but '" + key +
                         "' is quarantined");
      }
    }
    check_ppl_keys(it.value(), verdict, where);
  }
}

std::string check_verdict(const std::optional<std::string>& v, const std::string& where) {
  if (!v) throw InputError(where + ": audit block has no 'verdict'");
  if (*v != "causal" && *v != "leaky") {
    throw InputError(where + ": audit verdict must be \"causal\" or \"leaky\", got \"" + *v + "\"");
  }
  return *v;
}

}  // namespace grassaudit
