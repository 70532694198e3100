#pragma once
// Section (b): Grassmann / Transformer validation-perplexity ratio per source. Beside each
// ratio: what differs from the paper's setting ("not comparable because", built only from
// stated differences) and what the source leaves unstated (a separate column).
#include <optional>
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"
#include "report/wikitext_table.h"

namespace grassaudit {

struct RatioRow {
  RowOrigin origin = RowOrigin::kPaper;
  std::string source, setting, transformer_ppl, grassmann_ppl, ratio, caveats, unknowns;
  std::optional<double> ratio_value;  // for tests and for the text
  std::optional<double> epochs;       // ours: the shorter of the two runs' training, in epochs
  std::string limits;                 // ours: "1 epoch, 1 seed each, 4 layers, d_model 128"
};

std::vector<RatioRow> ratio_rows(const Published& pub, const std::vector<RunRecord>& runs);
std::string render_ratio_table(const std::vector<RatioRow>& rows);

// Runs left out of the ratio table because their perplexity is not valid (leaky or not
// audited), as one sentence; empty when there are none.
std::string ratio_exclusions(const std::vector<RunRecord>& runs);

// One sentence with the ratio range per origin, e.g. "paper 1.110-1.113; public
// reproductions 0.210-1.453 (Grassmann better in 2 of 7); ours 1.040 (1 epoch, 1 seed each,
// ...)". Origins without ratios are left out.
std::string ratio_ranges(const std::vector<RatioRow>& rows);

// When one of our ratios comes from runs shorter than the paper's, what a reproduction that
// published per-epoch validation perplexities measured at that epoch and at its best epochs;
// empty when no reproduction has the curves or none of our rows is shorter.
std::string early_ratio_note(const Published& pub, const std::vector<RatioRow>& rows);

}  // namespace grassaudit
