#pragma once
// Human-readable integers for messages: 2088628 -> "2,088,628" (no locale involved).
#include <cstdint>
#include <string>

namespace grassaudit {

std::string format_count(int64_t n);

}  // namespace grassaudit
