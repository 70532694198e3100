#pragma once
// Section (d): SNLI accuracy. Published rows, the alphaXiv note, then our runs as mean ± sample
// standard deviation over seeds.
#include <optional>
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"
#include "report/stats.h"

namespace grassaudit {

bool has_snli_runs(const std::vector<RunRecord>& runs);
std::string render_snli_table(const Published& pub, const std::vector<RunRecord>& runs);

}  // namespace grassaudit
