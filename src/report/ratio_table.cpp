#include "report/ratio_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "report/best_epoch.h"
#include "report/format.h"
#include "report/labels.h"
#include "report/limitations.h"
#include "report/seed_groups.h"

namespace grassaudit {
namespace {

std::string setting_text(const std::string& tokenizer, long long seq_len, long long layers,
                         const std::string& epochs) {
  return tokenizer + ", L " + std::to_string(seq_len) + ", " + std::to_string(layers) +
         " layers, " + epochs;
}

std::string model_word(MixerFamily family) {
  return family == MixerFamily::kAttention ? "Transformer" : "Grassmann";
}

void paper_rows(const Published& pub, std::vector<RatioRow>& out) {
  std::vector<std::string> unknown;
  if (pub.init.empty()) unknown.push_back("initialisation");
  if (!pub.optimizer_stated) unknown.push_back("optimizer and learning rate");
  unknown.push_back("seeds and spread (single numbers)");
  for (const auto& g : pub.lm) {
    if (g.family != MixerFamily::kGrassmann) continue;
    const PaperLmRow* t = find_paper_row(pub, MixerFamily::kAttention, g.layers, g.seq_len, g.schedule);
    if (!t) continue;
    RatioRow row;
    row.origin = RowOrigin::kPaper;
    row.source = g.source;
    row.setting = setting_text("BERT WordPiece", g.seq_len, g.layers,
                               fmt_epochs(pub.epochs) + " ep") +
                  (g.schedule == "first" ? "" : " (" + g.schedule + " schedule)");
    row.transformer_ppl = t->val_ppl_text;
    row.grassmann_ppl = g.val_ppl_text;
    row.ratio_value = g.val_ppl / t->val_ppl;
    row.ratio = fmt_ratio(*row.ratio_value);
    row.caveats =
        "reference setting; no code, so the pairing direction actually trained is unknown "
        "(the text reads as future pairing)";
    row.unknowns = join_list(unknown, ", ");
    out.push_back(row);
  }
}

// The published parameter count against the paper's, compared as both are printed (0.01M).
void param_difference(const std::string& who, const std::optional<double>& params,
                      const PaperLmRow* paper, std::vector<std::string>& c) {
  if (!params || !paper) return;
  if (fmt_count(*params) != paper->params_text) {
    c.push_back(who + " " + fmt_count(*params) + " params vs the paper's " + paper->params_text);
  }
}

std::string published_gap_text(const ReproLmRow& r) {
  if (!r.gap) return "";
  std::string out = " (published gap " + r.gap->text;
  const bool same_numbers = r.transformer_ppl && r.grassmann_ppl &&
                            r.gap->transformer_ppl == *r.transformer_ppl &&
                            r.gap->grassmann_ppl == *r.grassmann_ppl;
  if (!same_numbers) {
    out += ", on " + std::string(r.gap->split == "test" ? "test" : "validation") + " perplexity " +
           fmt_shortest(r.gap->grassmann_ppl) + " / " + fmt_shortest(r.gap->transformer_ppl) +
           " = " + fmt_ratio(r.gap->grassmann_ppl / r.gap->transformer_ppl);
  }
  return out + ")";
}

void repro_rows(const Published& pub, std::vector<RatioRow>& out) {
  for (const auto& r : pub.repro_lm) {
    RatioRow row;
    row.origin = RowOrigin::kReproduction;
    row.source = r.name;
    row.setting = setting_text(r.tokenizer, r.seq_len, r.layers,
                               r.epochs ? fmt_epochs(*r.epochs) + " ep" : "epochs not stated");
    if (!r.norm.empty()) row.setting += ", " + r.norm + "-norm";
    if (!r.init.empty()) row.setting += ", init " + r.init;
    row.transformer_ppl = r.transformer_ppl ? r.transformer_ppl_text : "-";
    row.grassmann_ppl = r.grassmann_ppl ? r.grassmann_ppl_text : "-";
    if (r.transformer_ppl && r.grassmann_ppl) {
      row.ratio_value = *r.grassmann_ppl / *r.transformer_ppl;
      row.ratio = fmt_ratio(*row.ratio_value) + published_gap_text(r);
    } else {
      row.ratio = "- (no Transformer baseline reported)";
    }

    // Differences from the paper's setting: only what the source states and the paper states
    // differently.
    std::vector<std::string> c;
    c.push_back(pairing_name(r.pairing) + " pairing (the paper's text: future)");
    if (r.tokenizer_id != pub.tokenizer_id) {
      c.push_back(r.tokenizer + " tokens, not the paper's WordPiece: perplexities over different "
                  "vocabularies are not comparable");
    }
    if (r.epochs && *r.epochs != pub.epochs) {
      c.push_back(fmt_epochs(*r.epochs) + " epochs vs the paper's " + fmt_epochs(pub.epochs));
    }
    if (!r.text.empty() && !pub.text.empty() && r.text != pub.text) {
      c.push_back(r.text + " text vs the paper's " + pub.text);
    }
    if (r.split == "test") c.push_back("test perplexities vs the paper's validation");
    if (r.d_model && pub.d_model && *r.d_model != *pub.d_model) {
      c.push_back("d_model " + std::to_string(*r.d_model) + " vs the paper's " +
                  std::to_string(*pub.d_model));
    }
    if (r.heads && pub.heads && *r.heads != *pub.heads && r.transformer_ppl) {
      c.push_back("Transformer " + std::to_string(*r.heads) + " heads vs the paper's " +
                  std::to_string(*pub.heads));
    }
    if (!r.norm.empty() && !pub.norm.empty() && r.norm != pub.norm) {
      c.push_back(r.norm + "-norm vs the paper's " + pub.norm + "-norm");
    }
    const PaperLmRow* pt = find_paper_row(pub, MixerFamily::kAttention, r.layers, r.seq_len);
    const PaperLmRow* pg = find_paper_row(pub, MixerFamily::kGrassmann, r.layers, r.seq_len);
    if (!pt) {
      c.push_back("the paper has no row at L " + std::to_string(r.seq_len) + " with " +
                  std::to_string(r.layers) + " layers");
    }
    if (r.transformer_ppl) param_difference("Transformer", r.transformer_params, pt, c);
    param_difference("Grassmann", r.grassmann_params, pg, c);
    row.caveats = join_list(c);

    // What the source does not state (and could differ).
    std::vector<std::string> u;
    if (!r.epochs) {
      u.push_back("epochs");
    } else if (r.epochs_basis == "default") {
      u.push_back("epochs of the reported run (" + fmt_epochs(*r.epochs) + " is the script's default)");
    }
    if (r.text.empty()) u.push_back("raw vs tokenized text");
    if (r.split.empty()) u.push_back("split (validation or test)");
    if (!r.d_model) u.push_back("d_model");
    if (r.norm.empty()) u.push_back("normalisation (pre / post)");
    if (r.init.empty()) {
      u.push_back("initialisation");
    } else if (pub.init.empty()) {
      u.push_back("whether " + r.init + " init matches the paper's (the paper states none)");
    }
    if ((r.transformer_ppl && !r.transformer_params) || !r.grassmann_params) {
      u.push_back("parameter counts");
    }
    if (r.seeds.empty()) u.push_back("seeds");
    row.unknowns = u.empty() ? "-" : join_list(u, ", ");
    out.push_back(row);
  }
}

// Our causal LM seed groups, paired by (tokenizer, dataset, L, layers, d_model, norm, precision,
// patience): attention against past-pairing Grassmann. The normalisation is part of the key: a
// pre-norm model against a post-norm one would measure the placement, not the mixer. So are the
// precision and the stopping rule: a run trained to its best epoch against one stopped by a token
// budget would measure the schedule.
using PairKey = std::tuple<std::string, std::string, long long, long long, long long, std::string,
                           std::string, long long>;

const SeedGroup* best_of(const std::vector<const SeedGroup*>& groups) {
  const SeedGroup* best = nullptr;
  for (const auto* g : groups) {
    if (!g->valid.n) continue;
    if (!best || g->valid.mean < best->valid.mean) best = g;
  }
  return best;
}

std::string limits_text(const SeedGroup* t, const SeedGroup* g) {
  std::vector<std::string> parts;
  const RunRecord& any = (t ? t : g)->first();
  std::optional<double> epochs;
  for (const SeedGroup* s : {t, g}) {
    if (s && s->first().epochs) epochs = epochs ? std::min(*epochs, *s->first().epochs) : *s->first().epochs;
  }
  // Runs stopped by a time budget can end at different epochs: a ratio across them says so.
  if (t && g && t->first().epochs && g->first().epochs &&
      fmt_epochs(*t->first().epochs) != fmt_epochs(*g->first().epochs)) {
    parts.push_back(model_word(*t->first().family) + " " + epochs_phrase(*t->first().epochs) + ", " +
                    model_word(*g->first().family) + " " + epochs_phrase(*g->first().epochs));
  } else if (epochs) {
    parts.push_back(epochs_phrase(*epochs));
  }
  if (t && g && t->runs.size() == g->runs.size()) {
    parts.push_back(seeds_phrase(t->runs.size()) + " each");
  } else {
    for (const SeedGroup* s : {t, g}) {
      if (s) parts.push_back(model_word(*s->first().family) + " " + seeds_phrase(s->runs.size()));
    }
  }
  if (any.layers) parts.push_back(std::to_string(*any.layers) + " layers");
  if (any.d_model) parts.push_back("d_model " + std::to_string(*any.d_model));
  return join_list(parts, ", ");
}

void our_rows(const Published& pub, const std::vector<RunRecord>& runs,
              std::vector<RatioRow>& out) {
  const std::vector<SeedGroup> groups = seed_groups(runs);
  std::map<PairKey, std::pair<std::vector<const SeedGroup*>, std::vector<const SeedGroup*>>> pairs;
  for (const auto& g : groups) {
    if (g.standing != Standing::kValid) continue;
    const RunRecord& r = g.first();
    PairKey key{r.tokenizer,         r.dataset, r.seq_len.value_or(-1), r.layers.value_or(-1),
                r.d_model.value_or(-1), r.norm,    precision_label(r),        r.patience};
    if (r.family == MixerFamily::kAttention) {
      pairs[key].first.push_back(&g);
    } else if (r.pairing == MixerPairing::kPast) {
      pairs[key].second.push_back(&g);
    }
  }
  for (const auto& [key, pair] : pairs) {
    const SeedGroup* t = best_of(pair.first);
    const SeedGroup* g = best_of(pair.second);
    const SeedGroup* any = t ? t : g;
    if (!any) continue;
    const RunRecord& a = any->first();
    RatioRow row;
    row.origin = RowOrigin::kOurs;
    std::string names;
    if (t) names += t->label;
    if (g) names += (names.empty() ? "" : " vs ") + g->label;
    row.source = "ours: " + names;
    row.setting = tokenizer_label(a) + " (" + text_label(a) + "), L " + or_dash(a.seq_len) + ", " +
                  or_dash(a.layers) + " layers";
    if (a.d_model) row.setting += ", d_model " + std::to_string(*a.d_model);
    if (a.norm == "pre") row.setting += ", pre-norm";
    if (precision_label(a) != "fp32") row.setting += ", " + precision_label(a);
    if (a.patience > 0) {
      // Early stopping is the setting; "to the best epoch" only once every member has got there
      // (why the others stopped is in the best-epoch section).
      bool at_best = true;
      for (const SeedGroup* s : {t, g}) {
        if (!s) continue;
        for (const RunRecord* r : s->runs) at_best = at_best && reached_best_epoch(*r);
      }
      row.setting += at_best ? ", to the best epoch (patience " + std::to_string(a.patience) + ")"
                             : ", early stopping (patience " + std::to_string(a.patience) +
                                   ") but stopped before the best epoch";
    }
    row.transformer_ppl = t ? group_valid_cell(*t) : "-";
    row.grassmann_ppl = g ? group_valid_cell(*g) : "-";
    row.limits = limits_text(t, g);
    for (const SeedGroup* s : {t, g}) {
      if (s && s->first().epochs) {
        row.epochs = row.epochs ? std::min(*row.epochs, *s->first().epochs) : *s->first().epochs;
      }
    }
    if (t && g) {
      row.ratio_value = g->valid.mean / t->valid.mean;
      row.ratio = fmt_ratio(*row.ratio_value) + " (" + row.limits + ")";
    } else {
      row.ratio = t ? "- (no causal past-pairing run)" : "- (no causal attention run)";
    }

    std::vector<std::string> c;
    c.push_back("past pairing (the paper's text: future), audited causal");
    // Differences shared by both runs are said once; the rest per model.
    std::vector<std::string> shared;
    std::vector<std::vector<std::string>> own;
    for (const SeedGroup* s : {t, g}) {
      if (s) own.push_back(run_differences(pub, s->first()));
    }
    for (const auto& d : own.front()) {
      if (own.size() == 1 || std::find(own.back().begin(), own.back().end(), d) != own.back().end()) {
        shared.push_back(d);
      }
    }
    for (const auto& d : shared) c.push_back(d);
    size_t k = 0;
    for (const SeedGroup* s : {t, g}) {
      if (!s) continue;
      for (const auto& d : own[k]) {
        if (std::find(shared.begin(), shared.end(), d) == shared.end()) {
          c.push_back(model_word(*s->first().family) + " " + d);
        }
      }
      ++k;
    }
    if (t && g && t->first().tokens_seen && g->first().tokens_seen &&
        *t->first().tokens_seen != *g->first().tokens_seen) {
      c.push_back("unequal budgets: " + fmt_count(*t->first().tokens_seen) + " vs " +
                  fmt_count(*g->first().tokens_seen) + " tokens seen");
    }
    if (pair.first.size() > 1) {
      c.push_back("best of " + std::to_string(pair.first.size()) + " attention settings");
    }
    if (pair.second.size() > 1) {
      c.push_back("best of " + std::to_string(pair.second.size()) + " past settings");
    }
    row.caveats = join_list(c);
    row.unknowns = "-";
    out.push_back(row);
  }
}

}  // namespace

std::vector<RatioRow> ratio_rows(const Published& pub, const std::vector<RunRecord>& runs) {
  std::vector<RatioRow> rows;
  paper_rows(pub, rows);
  repro_rows(pub, rows);
  our_rows(pub, runs, rows);
  return rows;
}

std::string render_ratio_table(const std::vector<RatioRow>& rows) {
  MdTable t;
  t.header = {"source", "setting", "Transformer ppl", "Grassmann ppl", "ratio G/T",
              "not comparable because", "not stated by the source"};
  for (const auto& r : rows) {
    t.rows.push_back({r.source, r.setting, r.transformer_ppl, r.grassmann_ppl, r.ratio, r.caveats,
                      r.unknowns});
  }
  return t.render();
}

std::string ratio_exclusions(const std::vector<RunRecord>& runs) {
  std::vector<std::string> leaky, unaudited;
  for (const auto& r : runs) {
    if (r.task != "lm") continue;
    if (standing_of(r) == Standing::kQuarantined) leaky.push_back("`" + r.name + "`");
    if (standing_of(r) == Standing::kUnaudited) unaudited.push_back("`" + r.name + "`");
  }
  std::string out;
  if (!leaky.empty()) {
    out += "Left out as LEAKY (quarantined; a leaky model's perplexity is not a valid "
           "perplexity): " + join_list(leaky, ", ") + ". ";
  }
  if (!unaudited.empty()) {
    out += "Left out as NOT AUDITED: " + join_list(unaudited, ", ") + ". ";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::string ratio_ranges(const std::vector<RatioRow>& rows) {
  struct Range {
    size_t n = 0, below_one = 0;
    double lo = 0, hi = 0;
    std::string limits;
  };
  Range ranges[3];
  for (const auto& r : rows) {
    if (!r.ratio_value) continue;
    Range& g = ranges[static_cast<int>(r.origin)];
    const double v = *r.ratio_value;
    g.lo = g.n ? std::min(g.lo, v) : v;
    g.hi = g.n ? std::max(g.hi, v) : v;
    ++g.n;
    if (v < 1.0) ++g.below_one;
    if (r.origin == RowOrigin::kOurs && g.limits.empty()) g.limits = r.limits;
  }
  const char* names[3] = {"paper", "public reproductions", "ours"};
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    const Range& g = ranges[i];
    if (!g.n) continue;
    std::string s = std::string(names[i]) + " " + fmt_ratio(g.lo);
    if (fmt_ratio(g.hi) != fmt_ratio(g.lo)) s += "-" + fmt_ratio(g.hi);
    if (g.below_one) {
      s += fmt::format(" (Grassmann better in {} of {})", g.below_one, g.n);
    }
    if (i == static_cast<int>(RowOrigin::kOurs) && !g.limits.empty()) s += " (" + g.limits + ")";
    parts.push_back(s);
  }
  return join_list(parts, "; ");
}

namespace {
// The curve's value at `epoch`, if the source published one there.
std::optional<double> at_epoch(const std::vector<EpochPpl>& curve, double epoch) {
  for (const auto& p : curve) {
    if (p.epoch == epoch) return p.ppl;
  }
  return std::nullopt;
}
}  // namespace

std::string early_ratio_note(const Published& pub, const std::vector<RatioRow>& rows) {
  std::optional<double> shortest;
  for (const auto& r : rows) {
    if (r.origin == RowOrigin::kOurs && r.ratio_value && r.epochs && *r.epochs < pub.epochs) {
      shortest = shortest ? std::min(*shortest, *r.epochs) : *r.epochs;
    }
  }
  if (!shortest) return "";
  std::vector<std::string> cases;
  for (const auto& r : pub.repro_lm) {
    const auto t = at_epoch(r.transformer_by_epoch, *shortest);
    const auto g = at_epoch(r.grassmann_by_epoch, *shortest);
    if (!t || !g || !r.transformer_ppl || !r.grassmann_ppl) continue;
    cases.push_back(fmt::format(
        "{} measured {} after {} ({} / {}) and {} at its best epochs ({} / {})", r.name,
        fmt_ratio(*g / *t), epochs_phrase(*shortest), fmt_shortest(*g), fmt_shortest(*t),
        fmt_ratio(*r.grassmann_ppl / *r.transformer_ppl), r.grassmann_ppl_text,
        r.transformer_ppl_text));
  }
  if (cases.empty()) return "";
  return "A ratio after " + epochs_phrase(*shortest) + " says little about the ratio at the best "
         "epoch: " + join_list(cases) + ". Our ratio is an early-training measurement, not an "
         "estimate of the converged ratio.";
}

}  // namespace grassaudit
