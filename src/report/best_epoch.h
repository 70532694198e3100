#pragma once
// Our language-model runs trained to their best epoch: runs with early stopping (summary
// "patience" > 0) on the paper's schedule. The section lists each with how far it got and why it
// stopped, pairs attention with past-pairing Grassmann of the same setting at their best epochs,
// and says in words where that ratio stands against the paper's and the reproductions'.
// A run still training (stopped by its time budget, to be resumed) is listed as such and gives
// no best-epoch ratio.
#include <optional>
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"

namespace grassaudit {

// A run that early-stopped or ran its planned epochs: its best epoch is final.
bool reached_best_epoch(const RunRecord& run);

// Runs with early stopping, in name order.
std::vector<const RunRecord*> best_epoch_runs(const std::vector<RunRecord>& runs);

struct BestEpochPair {
  const RunRecord* attention = nullptr;  // causal, reached its best epoch
  const RunRecord* past = nullptr;       // causal past-pairing Grassmann, same setting
  double ratio = 0;                      // past best valid ppl / attention best valid ppl
};

// Attention and past runs of one setting (tokenizer, text, L, layers, d_model, norm, precision,
// patience, seed) that both reached their best epoch with a valid (audited causal) perplexity.
std::vector<BestEpochPair> best_epoch_pairs(const std::vector<RunRecord>& runs);

// The section's Markdown (a "###" subsection of the ratio section); "" when no run has early
// stopping.
std::string render_best_epoch_section(const Published& pub, const std::vector<RunRecord>& runs);

}  // namespace grassaudit
