#include "report/best_epoch.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "report/format.h"
#include "report/labels.h"
#include "report/limitations.h"
#include "report/provenance.h"

namespace grassaudit {
namespace {

// Where the run computed: its CPU, or a CUDA run's GPU and host (report/provenance.h).
std::string cpu_of(const RunRecord& r) { return r.provenance ? machine_cell(*r.provenance) : std::string("not recorded"); }

// The best epoch as a whole epoch: validations at an epoch's end log the epoch's index plus the
// steps' rounding (3.005 for the end of epoch 3).
long long whole_epoch(double epoch) { return std::llround(epoch); }

std::string stop_words(const RunRecord& r) {
  if (r.stopped_by == "patience") {
    return "early-stopped: no improvement for " + std::to_string(r.patience) + " epochs";
  }
  if (r.stopped_by == "completed") return "ran its planned epochs";
  if (r.stopped_by == "time_budget") return "still training (time budget; resumes from its checkpoint)";
  if (r.stopped_by == "interrupted") return "still training (interrupted; resumes from its checkpoint)";
  if (r.stopped_by.empty()) return "not recorded";
  return r.stopped_by;
}

std::string best_epoch_cell(const RunRecord& r) {
  if (!r.best_epoch) return "not recorded";
  std::string out = std::to_string(whole_epoch(*r.best_epoch));
  if (!reached_best_epoch(r)) out += " so far";
  return out;
}

using SettingKey = std::tuple<std::string, std::string, long long, long long, long long, std::string,
                              std::string, long long, long long>;

SettingKey setting_key(const RunRecord& r) {
  return {r.tokenizer,         r.dataset, r.seq_len.value_or(-1), r.layers.value_or(-1),
          r.d_model.value_or(-1), r.norm, precision_label(r),        r.patience,
          r.seed.value_or(-1)};
}

bool valid_at_best(const RunRecord& r) {
  return reached_best_epoch(r) && standing_of(r) == Standing::kValid && r.best_valid_ppl;
}

std::string run_line(const RunRecord& r) {
  return fmt::format("`{}` reached {} at epoch {} of {} trained ({})", r.name,
                     fmt_ppl(*r.best_valid_ppl), whole_epoch(r.best_epoch.value_or(0)),
                     r.epochs ? fmt_epochs(*r.epochs) : std::string("?"), stop_words(r));
}

// Where `ratio` stands against the paper's ratio at the pair's L and depth and against every
// reproduction's published ratio.
std::string standing_paragraph(const Published& pub, const BestEpochPair& p) {
  const RunRecord& a = *p.attention;
  std::string out;
  const PaperLmRow* pt = a.seq_len && a.layers
                             ? find_paper_row(pub, MixerFamily::kAttention, *a.layers, *a.seq_len)
                             : nullptr;
  const PaperLmRow* pg = a.seq_len && a.layers
                             ? find_paper_row(pub, MixerFamily::kGrassmann, *a.layers, *a.seq_len)
                             : nullptr;
  if (pt && pg) {
    const double paper = pg->val_ppl / pt->val_ppl;
    out += fmt::format(
        "Against the paper: {} against its {} at L {} with {} layers ({} / {}): {:.1f}% {} it.",
        fmt_ratio(p.ratio), fmt_ratio(paper), pt->seq_len, pt->layers, pg->val_ppl_text,
        pt->val_ppl_text, 100.0 * std::abs(p.ratio / paper - 1.0),
        p.ratio >= paper ? "above" : "below");
  } else {
    out += "The paper has no row at this L and depth to compare with.";
  }
  std::vector<std::string> worse, better;
  double lo = 0, hi = 0;
  for (const auto& r : pub.repro_lm) {
    if (!r.transformer_ppl || !r.grassmann_ppl) continue;
    const double q = *r.grassmann_ppl / *r.transformer_ppl;
    const std::string item = r.name + " " + fmt_ratio(q);
    if (q > 1.0) {
      lo = worse.empty() ? q : std::min(lo, q);
      hi = worse.empty() ? q : std::max(hi, q);
      worse.push_back(item);
    } else {
      better.push_back(item);
    }
  }
  if (!worse.empty()) {
    const std::string where = p.ratio < lo   ? "below that range"
                              : p.ratio > hi ? "above that range"
                                             : "within that range";
    out += fmt::format(
        " Against the reproductions: {} of their {} published ratios have Grassmann worse than "
        "attention, from {} to {} ({}); ours lies {}.",
        worse.size(), worse.size() + better.size(), fmt_ratio(lo), fmt_ratio(hi), join_list(worse),
        where);
  }
  if (!better.empty()) {
    out += " In the others Grassmann comes out ahead (" + join_list(better) +
           "); their notes below say why those baselines are not like-for-like.";
  }
  return out;
}

std::string differences_paragraph(const Published& pub, const BestEpochPair& p) {
  const RunRecord& a = *p.attention;
  std::vector<std::string> diffs;
  for (const auto& d : run_differences(pub, a)) {
    // The schedule is said on its own below.
    if (d.find("epoch") != std::string::npos &&
        d.find(" the paper's " + fmt_epochs(pub.epochs)) != std::string::npos) {
      continue;
    }
    diffs.push_back(d);
  }
  std::string out = "What differs from the paper's setup: ";
  out += diffs.empty() ? std::string("nothing the artifacts record besides the schedule")
                       : join_list(diffs);
  out += fmt::format(
      "; the schedule: up to {} epochs with early stopping after {} epochs without improvement (the "
      "paper reports the best validation over {} epochs; a best epoch followed by {} epochs without "
      "improvement is the best of the full schedule unless the curve turns down again later); "
      "precision {} on {}. The reproductions differ among themselves in tokenizer, normalisation "
      "and epochs (the table above, column \"not comparable because\").",
      a.epochs_planned ? std::to_string(*a.epochs_planned) : std::string("?"), a.patience,
      fmt_epochs(pub.epochs), a.patience, precision_label(a), cpu_of(a));
  return out;
}

}  // namespace

bool reached_best_epoch(const RunRecord& run) {
  return run.patience > 0 && (run.stopped_by == "patience" || run.stopped_by == "completed");
}

std::vector<const RunRecord*> best_epoch_runs(const std::vector<RunRecord>& runs) {
  std::vector<const RunRecord*> out;
  for (const auto& r : runs) {
    if (r.task == "lm" && r.patience > 0) out.push_back(&r);
  }
  return out;  // load_runs sorts by name
}

std::vector<BestEpochPair> best_epoch_pairs(const std::vector<RunRecord>& runs) {
  std::map<SettingKey, BestEpochPair> by_key;
  for (const RunRecord* r : best_epoch_runs(runs)) {
    if (!valid_at_best(*r)) continue;
    BestEpochPair& p = by_key[setting_key(*r)];
    if (r->family == MixerFamily::kAttention) p.attention = r;
    if (r->family == MixerFamily::kGrassmann && r->pairing == MixerPairing::kPast) p.past = r;
  }
  std::vector<BestEpochPair> out;
  for (auto& [key, p] : by_key) {
    if (!p.attention || !p.past) continue;
    p.ratio = *p.past->best_valid_ppl / *p.attention->best_valid_ppl;
    out.push_back(p);
  }
  return out;
}

std::string render_best_epoch_section(const Published& pub, const std::vector<RunRecord>& runs) {
  const auto selected = best_epoch_runs(runs);
  if (selected.empty()) return "";
  std::string md = "### Trained to the best epoch\n\n";
  md += fmt::format(
      "Runs on the paper's {}-epoch schedule with early stopping: a run stops when its epoch-end "
      "validation has not improved for `patience` epochs, and its perplexity is that of its best "
      "epoch, audited on exactly those weights. The earlier runs above that stopped at a token "
      "budget stay as what they were.\n\n",
      fmt_epochs(pub.epochs));
  MdTable t;
  t.header = {"run", "mixer", "pairing", "precision, machine", "epochs trained", "stopped",
              "best epoch", "best validation ppl", "test ppl", "audit"};
  for (const RunRecord* r : selected) {
    t.rows.push_back({r->name, mixer_label(*r), pairing_label(*r),
                      precision_label(*r) + ", " + cpu_of(*r), budget_label(*r), stop_words(*r),
                      best_epoch_cell(*r), valid_ppl_cell(*r), test_ppl_cell(*r), audit_label(*r)});
  }
  md += t.render() + "\n";

  const auto pairs = best_epoch_pairs(runs);
  for (const auto& p : pairs) {
    md += fmt::format("**Best-epoch ratio, Grassmann (past) / attention: {}** ({} / {}). {}; {}.\n\n",
                      fmt_ratio(p.ratio), fmt_ppl(*p.past->best_valid_ppl),
                      fmt_ppl(*p.attention->best_valid_ppl), run_line(*p.past),
                      run_line(*p.attention));
    md += standing_paragraph(pub, p) + "\n\n";
    md += differences_paragraph(pub, p) + "\n\n";
  }
  if (pairs.empty()) {
    std::vector<std::string> waiting;
    for (const RunRecord* r : selected) {
      if (!reached_best_epoch(*r)) {
        waiting.push_back("`" + r->name + "` (" + stop_words(*r) + ", " + budget_label(*r) + ")");
      } else if (standing_of(*r) != Standing::kValid) {
        waiting.push_back("`" + r->name + "` (" + audit_label(*r) + ": no valid perplexity)");
      }
    }
    md += "No best-epoch ratio yet: it needs an attention run and a past-pairing run of one "
          "setting that have both reached their best epoch with a valid perplexity.";
    if (!waiting.empty()) md += " Not there yet: " + join_list(waiting) + ".";
    md += "\n\n";
  }
  md += "Audit verdicts: each of our rows here is audited on the weights its perplexity comes "
        "from (column \"audit\"); the paper's rows are " + pub.paper_audited +
        "; the reproductions' are " + pub.repro_audited + ".\n";
  return md;
}

}  // namespace grassaudit
