#include "report/literal_finding.h"

#include <fmt/format.h>

#include "report/format.h"
#include "report/labels.h"
#include "report/limitations.h"
#include "report/seed_groups.h"

namespace grassaudit {
namespace {

// Our causal seed group with the same tokenizer, L, depth, width and normalisation as `ref`, and
// the given pairing (the best one if several settings match): its mean over seeds is the number.
const SeedGroup* causal_peer(const std::vector<SeedGroup>& groups, const RunRecord& ref, MixerPairing pairing) {
  const SeedGroup* best = nullptr;
  for (const auto& g : groups) {
    const RunRecord& r = g.first();
    if (g.standing != Standing::kValid || r.pairing != pairing || !g.valid.n) continue;
    if (r.tokenizer != ref.tokenizer || r.seq_len != ref.seq_len || r.layers != ref.layers ||
        r.d_model != ref.d_model || r.norm != ref.norm)
      continue;
    if (!best || g.valid.mean < best->valid.mean) best = &g;
  }
  return best;
}

// The run's limits beside its number: budget, seed, and every recorded difference from the
// paper's setting.
std::string budget_sentence(const Published& pub, const RunRecord& run) {
  std::string s = "Training budget: " + budget_label(run) + " vs the paper's " +
                  fmt_epochs(pub.epochs) + " epochs; " +
                  (run.seed ? "one seed (" + std::to_string(*run.seed) + ")" : std::string("one run, seed not recorded"));
  std::vector<std::string> other;
  for (const auto& d : run_differences(pub, run)) {
    if (d.find("epoch") == std::string::npos) other.push_back(d);
  }
  if (!other.empty()) s += ". Other differences from the paper's setting: " + join_list(other);
  return s + ".";
}

// The conclusion of a leaky run that has a quarantined perplexity and a paper row to compare it
// with (`depth_differs`: the row is the paper's at the same L, another depth; `past`: our causal
// past-pairing peer, if any).
std::string compared_conclusion(const Published& pub, const std::vector<RunRecord>& runs, const RunRecord& run,
                                double q, const PaperLmRow& paper, bool depth_differs, const SeedGroup* past,
                                LiteralVerdict& verdict) {
  std::string conclusion;
  const double ratio = q / paper.val_ppl;
  const std::string qcell = quarantined_cell(q, run.audit.leak_horizon);
  const bool fewer_epochs = run.epochs && *run.epochs < pub.epochs;
  if (ratio < kFarBelowFraction) {
    verdict = LiteralVerdict::kInconsistent;
    conclusion = fmt::format(
        "trained as the text reads, the future-pairing model reaches {} ({:.1f}% of the "
        "paper's {}), far below it (below {:.0f}%). A model that sees the token it predicts does "
        "far better than the published number, so the paper's {} is inconsistent with the "
        "literal reading having been trained: its code most likely paired with the past, or "
        "something else differed.",
        qcell, ratio * 100.0, paper.val_ppl_text, kFarBelowFraction * 100.0,
        paper.val_ppl_text);
    if (fewer_epochs) {
      conclusion += " This run trained for fewer epochs than the paper; a longer run is not "
                    "expected to raise its best validation perplexity.";
    }
  } else if (ratio < 1.0) {
    verdict = LiteralVerdict::kSuggestive;
    conclusion = fmt::format(
        "the quarantined perplexity {} is below the paper's {} but not far below it (ratio "
        "{}, threshold {:.2f}); the data does not settle whether the literal reading was "
        "trained.",
        qcell, paper.val_ppl_text, fmt_ratio(ratio), kFarBelowFraction);
  } else {
    verdict = LiteralVerdict::kNotSettled;
    conclusion = fmt::format(
        "the quarantined perplexity {} is not below the paper's {} (ratio {}); the data does not "
        "settle it",
        qcell, paper.val_ppl_text, fmt_ratio(ratio));
    conclusion += fewer_epochs ? fmt::format(" (this run trained {} of the paper's {} epochs).",
                                             fmt_epochs(*run.epochs), fmt_epochs(pub.epochs))
                               : ".";
  }
  if (depth_differs) {
    conclusion += fmt::format(" Caveat: the paper's row has {} layers, this run {}.", paper.layers,
                              or_dash(run.layers));
    // Say what a literal run at the paper's depth measured, if there is one; predict nothing.
    for (const auto& other : runs) {
      if (other.task != "lm" || other.pairing != MixerPairing::kFuture || other.name == run.name) continue;
      if (other.layers != paper.layers || other.seq_len != run.seq_len || !other.quarantined_best_valid_ppl) continue;
      conclusion += fmt::format(" The literal run at the paper's depth, `{}`, reached {} after {}.", other.name,
                                quarantined_cell(*other.quarantined_best_valid_ppl, other.audit.leak_horizon),
                                budget_label(other));
    }
  }
  if (past) {
    const double vs_past = q / past->valid.mean;
    const std::string cell = group_valid_cell(*past);
    conclusion += vs_past < kFarBelowFraction
                      ? fmt::format(" Against our causal past-pairing run ({}), the leak is "
                                    "exploited: {:.1f}% of its perplexity.",
                                    cell, vs_past * 100.0)
                      : fmt::format(" Against our causal past-pairing run ({}), the leak is not "
                                    "visibly exploited at this budget ({:.1f}% of its "
                                    "perplexity).",
                                    cell, vs_past * 100.0);
  }
  return conclusion;
}

LiteralFinding analyse(const Published& pub, const std::vector<RunRecord>& runs,
                       const RunRecord& run) {
  LiteralFinding f;
  f.run = run.name;
  std::string md = "**`" + run.name + "`** (" + pairing_label(run) + "; " + tokenizer_label(run) +
                   " (" + text_label(run) + "), L " + or_dash(run.seq_len) + ", " + or_dash(run.layers) + " layers)\n\n";
  const Standing st = standing_of(run);
  if (st == Standing::kUnaudited) {
    f.verdict = LiteralVerdict::kNotAudited;
    f.markdown = md + "- Not audited: its perplexity is withheld and no conclusion is drawn.\n";
    return f;
  }
  if (st == Standing::kValid) {
    f.verdict = LiteralVerdict::kNotLeaky;
    md += "- Audit: " + audit_label(run) + ". The audit found no leak in these weights, so this "
          "run does not test the literal reading";
    if (run.best_valid_ppl) md += " (validation perplexity " + fmt_ppl(*run.best_valid_ppl) + ")";
    f.markdown = md + ".\n";
    return f;
  }

  md += "- Audit: " + audit_label(run) + ".\n";
  const auto q = run.quarantined_best_valid_ppl;
  const PaperLmRow* paper =
      run.layers && run.seq_len ? find_paper_row(pub, MixerFamily::kGrassmann, *run.layers, *run.seq_len)
                                : nullptr;
  // No row at this depth: compare with the paper's Grassmann row at the same L (first
  // schedule) and say that the depth differs, rather than saying nothing.
  bool depth_differs = false;
  if (!paper && run.seq_len) {
    paper = find_paper_row_same_len(pub, MixerFamily::kGrassmann, *run.seq_len);
    depth_differs = paper != nullptr;
  }
  if (q) {
    md += "- Best validation perplexity: " + quarantined_cell(*q, run.audit.leak_horizon) + ".\n";
  }
  if (paper) {
    md += "- The paper's GrassmannLM at L " + std::to_string(paper->seq_len) + ", " +
          std::to_string(paper->layers) + " layers: " + paper->val_ppl_text + " (" +
          paper->source + ")";
    if (q) md += "; quarantined / paper = " + fmt_ratio(*q / paper->val_ppl);
    if (depth_differs)
      md += " (the paper has no row at this depth: this is its row at the same L, " +
            std::to_string(paper->layers) + " layers against this run's " + or_dash(run.layers) + ")";
    md += ".\n";
  }
  const std::vector<SeedGroup> groups = seed_groups(runs);
  const SeedGroup* past = causal_peer(groups, run, MixerPairing::kPast);
  const SeedGroup* attn = causal_peer(groups, run, MixerPairing::kCausalMask);
  if (past || attn) {
    md += "- Our causal runs at the same tokenizer, L, depth, width and normalisation:";
    if (past) md += " past pairing " + group_valid_cell(*past) + " (`" + past->label + "`)";
    if (past && attn) md += ",";
    if (attn) md += " attention " + group_valid_cell(*attn) + " (`" + attn->label + "`)";
    md += ".\n";
  }
  md += "- " + budget_sentence(pub, run) + "\n";

  std::string conclusion;
  if (!q) {
    f.verdict = LiteralVerdict::kNoComparison;
    conclusion = "the run records no quarantined validation perplexity; nothing to compare.";
  } else if (!paper) {
    f.verdict = LiteralVerdict::kNoComparison;
    conclusion = "the paper reports no Grassmann row at L " + or_dash(run.seq_len) + " with " +
                 or_dash(run.layers) + " layers; no comparison is made.";
  } else {
    conclusion = compared_conclusion(pub, runs, run, *q, *paper, depth_differs, past, f.verdict);
  }
  f.markdown = md + "\n**Conclusion:** " + conclusion + "\n";
  return f;
}

}  // namespace

std::vector<LiteralFinding> literal_findings(const Published& pub,
                                             const std::vector<RunRecord>& runs) {
  std::vector<LiteralFinding> out;
  for (const auto& r : runs) {
    if (r.task == "lm" && r.pairing == MixerPairing::kFuture) out.push_back(analyse(pub, runs, r));
  }
  if (out.empty()) {
    LiteralFinding none;
    none.markdown =
        "No paper-literal (future-pairing) run has been recorded yet; nothing to conclude.\n";
    out.push_back(none);
  }
  return out;
}

std::string render_literal_section(const std::vector<LiteralFinding>& findings) {
  std::string out;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (i) out += "\n";
    out += findings[i].markdown;
  }
  return out;
}

}  // namespace grassaudit
