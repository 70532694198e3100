#pragma once
// Section (d): SNLI accuracy. Published rows, the alphaXiv note, then our runs as mean ± sample
// standard deviation over seeds.
#include <optional>
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"

namespace grassaudit {

struct MeanStd {
  double mean = 0;
  std::optional<double> std;  // sample (n - 1) standard deviation; nullopt for n < 2
  size_t n = 0;
};
MeanStd mean_std(const std::vector<double>& xs);
std::string fmt_mean_std_percent(const MeanStd& m);  // "85.20 ± 0.30% (n=3)", "85.20% (n=1)"

bool has_snli_runs(const std::vector<RunRecord>& runs);
std::string render_snli_table(const Published& pub, const std::vector<RunRecord>& runs);

}  // namespace grassaudit
