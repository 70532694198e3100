#include "report/stats.h"

#include <cmath>

#include <fmt/format.h>

namespace grassaudit {

MeanStd mean_std(const std::vector<double>& xs) {
  MeanStd m;
  m.n = xs.size();
  if (xs.empty()) return m;
  double sum = 0;
  for (double x : xs) sum += x;
  m.mean = sum / static_cast<double>(xs.size());
  if (xs.size() >= 2) {
    double ss = 0;
    for (double x : xs) ss += (x - m.mean) * (x - m.mean);
    m.std = std::sqrt(ss / static_cast<double>(xs.size() - 1));
  }
  return m;
}

std::string fmt_mean_std_percent(const MeanStd& m) {
  if (m.n == 0) return "-";
  if (!m.std) return fmt::format("{:.2f}% (n={})", m.mean * 100.0, m.n);
  return fmt::format("{:.2f} ± {:.2f}% (n={})", m.mean * 100.0, *m.std * 100.0, m.n);
}

std::string fmt_mean_std_ppl(const MeanStd& m) {
  if (m.n == 0) return "-";
  if (!m.std) return fmt::format("{:.2f}", m.mean);
  return fmt::format("{:.2f} ± {:.2f} (n={})", m.mean, *m.std, m.n);
}

}  // namespace grassaudit
