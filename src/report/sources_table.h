#pragma once
// Where every stated field of a public reproduction was read: one row per citation in
// reproductions.json (repository file at a commit).
#include <string>

#include "report/published.h"

namespace grassaudit {

std::string render_sources_table(const Published& pub);

}  // namespace grassaudit
