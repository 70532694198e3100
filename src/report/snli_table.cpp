#include "report/snli_table.h"

#include <cmath>

#include <fmt/format.h>

#include "report/format.h"

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

bool has_snli_runs(const std::vector<RunRecord>& runs) {
  for (const auto& r : runs) {
    if (r.task == "snli") return true;
  }
  return false;
}

std::string render_snli_table(const Published& pub, const std::vector<RunRecord>& runs) {
  MdTable t;
  t.header = {"source", "head", "features", "seeds", "validation acc", "test acc", "params",
              "notes"};
  for (const auto& r : pub.snli) {
    t.rows.push_back({r.source, r.model, pub.snli_features, "not stated",
                      fmt_percent(r.val_acc), fmt_percent(r.test_acc), "not stated",
                      "single numbers, no spread reported"});
  }
  for (const auto& n : pub.repro_snli) {
    t.rows.push_back({n.name, "both heads", n.features, "not stated",
                      fmt::format("{:.0f}-{:.0f}%", n.accuracy_low * 100.0,
                                  n.accuracy_high * 100.0),
                      "-", "not stated", n.accuracy_note + "; " + n.defect + "; not comparable"});
  }
  for (const auto& r : runs) {
    if (r.task != "snli") continue;
    std::string seeds = r.seeds.empty() ? std::to_string(r.val_acc.size()) : fmt_offsets(r.seeds);
    t.rows.push_back({"ours: " + r.name, r.head, r.dataset.empty() ? "not recorded" : r.dataset, seeds,
                      fmt_mean_std_percent(mean_std(r.val_acc)),
                      fmt_mean_std_percent(mean_std(r.test_acc)),
                      r.params ? fmt_count(*r.params) : "?", "mean ± sample std over seeds"});
  }
  return t.render();
}

}  // namespace grassaudit
