#pragma once
// Section (c): what the paper-literal (future-pairing) model does when trained, and what that
// implies for the paper's Grassmann perplexity. The conclusion is computed from the numbers.
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"

namespace grassaudit {

// A quarantined perplexity below this fraction of the paper's number counts as "far below".
constexpr double kFarBelowFraction = 0.5;

enum class LiteralVerdict {
  kNoRun,            // no future-pairing LM run
  kNotAudited,       // run exists but has no audit
  kNotLeaky,         // the audit found no leak (nothing to compare)
  kNoComparison,     // leaky, but no quarantined ppl or no paper row at its L / depth
  kInconsistent,     // quarantined ppl far below the paper's: paper's number inconsistent
  kSuggestive,       // below the paper's, but not far below
  kNotSettled,       // not below the paper's number
};

struct LiteralFinding {
  std::string run;  // empty for kNoRun
  LiteralVerdict verdict = LiteralVerdict::kNoRun;
  std::string markdown;  // the bullet list and conclusion for this run
};

std::vector<LiteralFinding> literal_findings(const Published& pub,
                                             const std::vector<RunRecord>& runs);

// The whole section body (without its heading).
std::string render_literal_section(const std::vector<LiteralFinding>& findings);

}  // namespace grassaudit
