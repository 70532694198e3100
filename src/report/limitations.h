#pragma once
// How one of our runs differs from the paper's setting, in words, so that every number the
// report shows for the run carries its limits beside it (epochs, depth, width, rank, offsets,
// tokenizer, text variant). Built only from what the artifacts record and paper.json states.
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"

namespace grassaudit {

// E.g. {"1 epoch vs the paper's 30", "4 layers vs the paper's 6 at L 128",
//       "d_model 128 vs the paper's 256", "rank 16 vs the paper's 32", ...}. Empty when the run
// matches the paper on everything it records.
std::vector<std::string> run_differences(const Published& pub, const RunRecord& run);

// "1 epoch", "2.50 epochs".
std::string epochs_phrase(double epochs);
// "1 seed", "3 seeds".
std::string seeds_phrase(size_t n);

// The text variant our run was trained on: its "dataset" as recorded, or "not recorded".
std::string text_label(const RunRecord& run);

std::string join_list(const std::vector<std::string>& parts, const std::string& sep = "; ");

}  // namespace grassaudit
