#include "report/snli_table.h"

#include <cmath>

#include <fmt/format.h>

#include "report/format.h"

namespace grassaudit {

bool has_snli_runs(const std::vector<RunRecord>& runs) {
  for (const auto& r : runs) {
    if (r.task == "snli") return true;
  }
  return false;
}

namespace {

std::string paper_training(const Published& pub) {
  if (pub.snli_train_pairs) return "SNLI train (" + fmt_thousands(*pub.snli_train_pairs) + " pairs)";
  if (pub.snli_dataset_train_pairs) {
    return "SNLI train (count not stated; the standard split has " +
           fmt_thousands(*pub.snli_dataset_train_pairs) + " pairs)";
  }
  return "SNLI train (count not stated)";
}

// Our run's training data and epochs, each beside the paper's.
std::string our_training(const Published& pub, const RunRecord& r) {
  std::string out = r.train_pairs ? fmt_thousands(*r.train_pairs) + " pairs" : "not recorded";
  if (!r.train_data.empty()) out += " (" + r.train_data + ")";
  out += " vs the paper's SNLI train";
  const auto paper_pairs = pub.snli_train_pairs ? pub.snli_train_pairs : pub.snli_dataset_train_pairs;
  if (paper_pairs) out += " (" + fmt_thousands(*paper_pairs) + " pairs)";
  return out;
}

std::string our_epochs(const Published& pub, const RunRecord& r) {
  if (!r.epochs) return "not recorded";
  std::string out = fmt_epochs(*r.epochs);
  if (pub.snli_epochs > 0 && *r.epochs != pub.snli_epochs) {
    out += " (the paper: " + fmt_epochs(pub.snli_epochs) + ")";
  }
  return out;
}

}  // namespace

std::string render_snli_table(const Published& pub, const std::vector<RunRecord>& runs) {
  MdTable t;
  t.header = {"source", "head", "features", "training data", "epochs", "seeds", "validation acc",
              "test acc", "params", "notes"};
  for (const auto& r : pub.snli) {
    t.rows.push_back({r.source, r.model, pub.snli_features, paper_training(pub),
                      pub.snli_epochs > 0 ? fmt_epochs(pub.snli_epochs) : "not stated",
                      "not stated", fmt_percent(r.val_acc), fmt_percent(r.test_acc), "not stated",
                      "single numbers, no spread reported"});
  }
  for (const auto& n : pub.repro_snli) {
    t.rows.push_back({n.name, "both heads", n.features, "not stated",
                      n.epochs ? fmt_epochs(*n.epochs) : "not stated", "not stated", "-",
                      fmt::format("{:.0f}-{:.0f}%", n.accuracy_low * 100.0, n.accuracy_high * 100.0),
                      "not stated", n.accuracy_note + "; " + n.defect + "; not comparable"});
  }
  for (const auto& r : runs) {
    if (r.task != "snli") continue;
    std::string seeds = r.seeds.empty() ? std::to_string(r.val_acc.size()) : fmt_offsets(r.seeds);
    t.rows.push_back({"ours: " + r.name, r.head, r.dataset.empty() ? "not recorded" : r.dataset,
                      our_training(pub, r), our_epochs(pub, r), seeds,
                      fmt_mean_std_percent(mean_std(r.val_acc)),
                      fmt_mean_std_percent(mean_std(r.test_acc)),
                      r.params ? fmt_count(*r.params) : "?", "mean ± sample std over seeds"});
  }
  return t.render();
}

}  // namespace grassaudit
