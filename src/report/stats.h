#pragma once
// Mean and sample standard deviation over seeds, and their fixed formats.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

struct MeanStd {
  double mean = 0;
  std::optional<double> std;  // sample (n - 1) standard deviation; nullopt for n < 2
  size_t n = 0;
};
MeanStd mean_std(const std::vector<double>& xs);
std::string fmt_mean_std_percent(const MeanStd& m);  // "85.20 ± 0.30% (n=3)", "85.20% (n=1)"
std::string fmt_mean_std_ppl(const MeanStd& m);      // "271.78 ± 1.20 (n=3)", "271.78" for n = 1

}  // namespace grassaudit
