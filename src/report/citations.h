#pragma once
// Citations in reproductions.json: each stated field of a published row names the repository
// file and commit it was read from. Reading checks the rule both ways: a stated field without a
// citation, or a citation of a field the row does not have, is an InputError.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/published.h"

namespace grassaudit {

// Reads row["citations"] (an array of {fields, path, commit, says}). `known` are the field
// names a citation may name; `stated` those the row states (non-null) and so must be cited.
// InputError "<where>: ..." for a malformed citation, a commit that is not 40 hex digits, an
// unknown field, or a stated field no citation covers.
std::vector<Citation> read_citations(const nlohmann::json& row, const std::string& where,
                                     const std::vector<std::string>& known,
                                     const std::vector<std::string>& stated);

// The names in `candidates` whose value in `obj` is present and not null.
std::vector<std::string> stated_fields(const nlohmann::json& obj,
                                       const std::vector<std::string>& candidates);

}  // namespace grassaudit
