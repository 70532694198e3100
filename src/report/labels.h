#pragma once
// Human-readable cells for one of our runs, shared by every table.
#include <string>

#include "report/runs.h"

namespace grassaudit {

std::string mixer_label(const RunRecord& run);      // "attention" | "grassmann"; "-" if not LM
std::string pairing_label(const RunRecord& run);    // "past; offsets 1,2,4 per layer"
std::string tokenizer_label(const RunRecord& run);  // "WordPiece" | "word-level" | "?" (no text variant)
std::string budget_label(const RunRecord& run);     // "1 ep (2.40M tok)"
std::string audit_label(const RunRecord& run);      // "CAUSAL (horizon 0, max effect 1.0e-08)"
std::string precision_label(const RunRecord& run);  // "fp32" | "bf16" | "tf32" (fp32 where not recorded)
// The pairing in words, for any row: "future (paper-literal)" | "past" | "causal mask".
std::string pairing_words(MixerPairing pairing);

// The validation perplexity cell: a number only for a causal run; the quarantined form for a
// leaky run; "withheld (not audited)" for an unaudited one.
std::string valid_ppl_cell(const RunRecord& run);
std::string test_ppl_cell(const RunRecord& run);

}  // namespace grassaudit
