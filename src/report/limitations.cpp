#include "report/limitations.h"

#include <cmath>

#include <fmt/format.h>

#include "report/format.h"
#include "report/labels.h"

namespace grassaudit {

std::string epochs_phrase(double epochs) {
  return fmt_epochs(epochs) + (epochs == 1.0 ? " epoch" : " epochs");
}

std::string seeds_phrase(size_t n) { return std::to_string(n) + (n == 1 ? " seed" : " seeds"); }

std::string text_label(const RunRecord& run) {
  return run.dataset.empty() ? "not recorded" : run.dataset;
}

std::string join_list(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::vector<std::string> run_differences(const Published& pub, const RunRecord& run) {
  std::vector<std::string> c;
  if (!run.epochs) {
    c.push_back("epochs not recorded");
  } else if (run.patience > 0 && run.stopped_by == "patience" && run.best_epoch) {
    // Early stopping ends the schedule at the best epoch's patience; the epochs left were not
    // expected to improve on it.
    c.push_back(fmt::format("early-stopped after {} (best epoch {}, patience {}) of the paper's {}",
                            epochs_phrase(*run.epochs), std::llround(*run.best_epoch),
                            run.patience, fmt_epochs(pub.epochs)));
  } else if (*run.epochs != pub.epochs) {
    c.push_back(epochs_phrase(*run.epochs) + " vs the paper's " + fmt_epochs(pub.epochs));
  }
  const MixerFamily family = run.family.value_or(MixerFamily::kGrassmann);
  const PaperLmRow* same_len =
      run.seq_len ? find_paper_row_same_len(pub, family, *run.seq_len) : nullptr;
  if (run.seq_len && run.layers &&
      !find_paper_row(pub, family, *run.layers, *run.seq_len)) {
    c.push_back(same_len ? std::to_string(*run.layers) + " layers vs the paper's " +
                               std::to_string(same_len->layers) + " at L " +
                               std::to_string(*run.seq_len)
                         : "the paper has no row at L " + std::to_string(*run.seq_len));
  }
  if (!run.norm.empty() && !pub.norm.empty() && run.norm != pub.norm) {
    c.push_back(run.norm + "-norm vs the paper's " + pub.norm + "-norm");
  }
  if (run.d_model && pub.d_model && *run.d_model != *pub.d_model) {
    c.push_back("d_model " + std::to_string(*run.d_model) + " vs the paper's " +
                std::to_string(*pub.d_model));
  }
  if (family == MixerFamily::kGrassmann) {
    if (run.rank && pub.rank && *run.rank != *pub.rank) {
      c.push_back("rank " + std::to_string(*run.rank) + " vs the paper's " + std::to_string(*pub.rank));
    }
    if (same_len && !same_len->offsets.empty() && !run.offsets.empty() &&
        run.offsets != same_len->offsets) {
      c.push_back("offsets " + fmt_offsets(run.offsets) + " vs the paper's " +
                  fmt_offsets(same_len->offsets));
    }
  } else if (run.heads && pub.heads && *run.heads != *pub.heads) {
    c.push_back(std::to_string(*run.heads) + " heads vs the paper's " + std::to_string(*pub.heads));
  }
  if (!run.tokenizer.empty() && run.tokenizer != "wordpiece") {
    c.push_back(tokenizer_label(run) + " tokens, not the paper's WordPiece: perplexities are not "
                "comparable with the paper's");
  }
  if (run.dataset.empty()) {
    c.push_back("text variant (raw / tokenized) not recorded");
  } else if (!pub.text.empty() && run.dataset.find(pub.text) == std::string::npos) {
    c.push_back("text " + run.dataset + " vs the paper's " + pub.text);
  }
  return c;
}

}  // namespace grassaudit
