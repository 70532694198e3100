#pragma once
// Internal to src/audit: how the checks write their JSON fields (nullopt and empty evidence as null).
#include <optional>

#include <nlohmann/json.hpp>

#include "audit/audit_result.h"

namespace grassaudit {

template <class T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json evidence_json(const Evidence& e);

}  // namespace grassaudit
