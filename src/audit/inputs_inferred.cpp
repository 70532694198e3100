#include "audit/inputs_inferred.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

namespace grassaudit {

std::string with_inputs_inferred(const std::string& summary, const InputsInferred& inferred) {
  if (inferred.empty()) return summary;
  std::vector<std::string> parts;
  for (const auto& [name, kind] : inferred) parts.push_back(name + "=" + kind);
  const std::string line = fmt::format("  inputs inferred: {}\n", fmt::join(parts, ", "));
  const size_t end = summary.find('\n');
  if (end == std::string::npos) return summary + "\n" + line;
  return summary.substr(0, end + 1) + line + summary.substr(end + 1);
}

void add_inputs_inferred(nlohmann::json& facts, const InputsInferred& inferred) {
  if (inferred.empty()) return;
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, kind] : inferred) j[name] = kind;
  facts["inputs_inferred"] = j;
}

}  // namespace grassaudit
