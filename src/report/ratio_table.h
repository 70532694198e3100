#pragma once
// Section (b): Grassmann / Transformer validation-perplexity ratio per source, with the
// differences that make rows not comparable written next to each ratio.
#include <optional>
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"
#include "report/wikitext_table.h"

namespace grassaudit {

struct RatioRow {
  RowOrigin origin = RowOrigin::kPaper;
  std::string source, setting, transformer_ppl, grassmann_ppl, ratio, caveats;
  std::optional<double> ratio_value;  // for tests and for the text
};

std::vector<RatioRow> ratio_rows(const Published& pub, const std::vector<RunRecord>& runs);
std::string render_ratio_table(const std::vector<RatioRow>& rows);

// Runs left out of the ratio table because their perplexity is not valid (leaky or not
// audited), as one sentence; empty when there are none.
std::string ratio_exclusions(const std::vector<RunRecord>& runs);

}  // namespace grassaudit

namespace grassaudit {
// One sentence with the ratio range per origin, e.g. "paper 1.110-1.113; public
// reproductions 1.242-1.453; ours 1.100". Origins without ratios are left out.
std::string ratio_ranges(const std::vector<RatioRow>& rows);
}  // namespace grassaudit
