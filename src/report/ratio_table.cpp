#include "report/ratio_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "report/format.h"
#include "report/labels.h"

namespace grassaudit {
namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string setting_text(const std::string& tokenizer, long long seq_len, long long layers,
                         const std::string& epochs) {
  return tokenizer + ", L " + std::to_string(seq_len) + ", " + std::to_string(layers) +
         " layers, " + epochs;
}

void paper_rows(const Published& pub, std::vector<RatioRow>& out) {
  for (const auto& g : pub.lm) {
    if (g.family != Family::kGrassmann) continue;
    const PaperLmRow* t = find_paper_row(pub, Family::kAttention, g.layers, g.seq_len, g.schedule);
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
    out.push_back(row);
  }
}

void repro_rows(const Published& pub, std::vector<RatioRow>& out) {
  for (const auto& r : pub.repro_lm) {
    RatioRow row;
    row.origin = RowOrigin::kReproduction;
    row.source = r.name;
    row.setting = setting_text(r.tokenizer, r.seq_len, r.layers,
                               r.epochs ? fmt_epochs(*r.epochs) + " ep" : "epochs not stated");
    row.transformer_ppl = r.transformer_ppl ? r.transformer_ppl_text : "-";
    row.grassmann_ppl = r.grassmann_ppl ? r.grassmann_ppl_text : "-";
    if (r.transformer_ppl && r.grassmann_ppl) {
      row.ratio_value = *r.grassmann_ppl / *r.transformer_ppl;
      row.ratio = fmt_ratio(*row.ratio_value);
      if (!r.gap_published.empty()) row.ratio += " (published gap " + r.gap_published + ")";
    } else {
      row.ratio = "- (no Transformer baseline reported)";
    }
    std::vector<std::string> c;
    c.push_back(pairing_name(r.pairing) + " pairing (the paper's text: future)");
    if (r.tokenizer_id != pub.tokenizer_id) {
      c.push_back(r.tokenizer + " tokens, not the paper's WordPiece: perplexities over different "
                  "vocabularies are not comparable");
    }
    if (!r.epochs) {
      c.push_back("epochs not stated");
    } else if (*r.epochs != pub.epochs) {
      c.push_back(fmt_epochs(*r.epochs) + " epochs vs the paper's " + fmt_epochs(pub.epochs));
    }
    if (r.text.empty()) {
      c.push_back("raw vs tokenized WikiText-2 not stated");
    } else if (r.text != pub.text) {
      c.push_back(r.text + " text vs the paper's " + pub.text);
    }
    if (!find_paper_row(pub, Family::kAttention, r.layers, r.seq_len)) {
      c.push_back("the paper has no row at L " + std::to_string(r.seq_len) + " with " +
                  std::to_string(r.layers) + " layers");
    }
    c.push_back("parameter counts not stated");
    row.caveats = join(c, "; ");
    out.push_back(row);
  }
}

// Our causal LM runs, grouped by (tokenizer, dataset, L, layers).
using GroupKey = std::tuple<std::string, std::string, long long, long long>;

const RunRecord* best_of(const std::vector<const RunRecord*>& runs) {
  const RunRecord* best = nullptr;
  for (const auto* r : runs) {
    if (!r->best_valid_ppl) continue;
    if (!best || *r->best_valid_ppl < *best->best_valid_ppl) best = r;
  }
  return best;
}

std::string model_word(Family family) {
  return family == Family::kAttention ? "Transformer" : "Grassmann";
}

void param_caveat(const Published& pub, const RunRecord& run, Family family,
                  std::vector<std::string>& c) {
  if (!run.params || !run.seq_len || !run.layers) return;
  const PaperLmRow* p = find_paper_row(pub, family, *run.layers, *run.seq_len);
  if (!p) return;
  if (std::fabs(*run.params - p->params) / p->params > 0.01) {
    c.push_back(model_word(family) + " " + fmt_count(*run.params) +
                " params vs the paper's " + p->params_text);
  }
}

void our_rows(const Published& pub, const std::vector<RunRecord>& runs,
              std::vector<RatioRow>& out) {
  std::map<GroupKey, std::pair<std::vector<const RunRecord*>, std::vector<const RunRecord*>>>
      groups;  // (attention runs, past-pairing Grassmann runs)
  for (const auto& r : runs) {
    if (r.task != "lm" || standing_of(r) != Standing::kValid) continue;
    GroupKey key{r.tokenizer, r.dataset, r.seq_len.value_or(-1), r.layers.value_or(-1)};
    if (r.family == Family::kAttention) {
      groups[key].first.push_back(&r);
    } else if (r.pairing == Pairing::kPast) {
      groups[key].second.push_back(&r);
    }
  }
  for (const auto& [key, pair] : groups) {
    const RunRecord* t = best_of(pair.first);
    const RunRecord* g = best_of(pair.second);
    const RunRecord* any = t ? t : g;
    if (!any) continue;
    RatioRow row;
    row.origin = RowOrigin::kOurs;
    std::string names;
    if (t) names += t->name;
    if (g) names += (names.empty() ? "" : " vs ") + g->name;
    row.source = "ours: " + names;
    row.setting = tokenizer_label(*any) + ", L " + or_dash(any->seq_len) + ", " +
                  or_dash(any->layers) + " layers";
    row.transformer_ppl = t ? fmt_ppl(*t->best_valid_ppl) : "-";
    row.grassmann_ppl = g ? fmt_ppl(*g->best_valid_ppl) : "-";
    if (t && g) {
      row.ratio_value = *g->best_valid_ppl / *t->best_valid_ppl;
      row.ratio = fmt_ratio(*row.ratio_value);
    } else {
      row.ratio = t ? "- (no causal past-pairing run)" : "- (no causal attention run)";
    }
    std::vector<std::string> c;
    c.push_back("past pairing, audited causal");
    if (any->tokenizer != "wordpiece") {
      c.push_back(tokenizer_label(*any) + " tokens, not the paper's WordPiece: not comparable "
                  "with the paper's perplexities");
    }
    if (any->dataset.empty()) {
      c.push_back("text variant (raw/tokenized) not recorded");
    } else if (any->dataset.find(pub.text) == std::string::npos) {
      c.push_back("text " + any->dataset + " vs the paper's " + pub.text);
    }
    for (const RunRecord* r : {t, g}) {
      if (!r) continue;
      const Family family = r == t ? Family::kAttention : Family::kGrassmann;
      const std::string who = model_word(family);
      if (r->epochs && *r->epochs != pub.epochs) {
        c.push_back(who + " " + fmt_epochs(*r->epochs) + " epochs vs the paper's " +
                    fmt_epochs(pub.epochs));
      } else if (!r->epochs) {
        c.push_back(who + " epochs not recorded");
      }
      if (r->d_model && *r->d_model != 256) {
        c.push_back(who + " d_model " + std::to_string(*r->d_model) + " vs the paper's 256");
      }
      param_caveat(pub, *r, family, c);
    }
    if (t && g && t->tokens_seen && g->tokens_seen && *t->tokens_seen != *g->tokens_seen) {
      c.push_back("unequal budgets: " + fmt_count(*t->tokens_seen) + " vs " +
                  fmt_count(*g->tokens_seen) + " tokens seen");
    }
    if (any->seq_len && any->layers &&
        !find_paper_row(pub, Family::kAttention, *any->layers, *any->seq_len)) {
      c.push_back("the paper has no row at this L and depth");
    }
    if (pair.first.size() > 1) c.push_back("best of " + std::to_string(pair.first.size()) + " attention runs");
    if (pair.second.size() > 1) c.push_back("best of " + std::to_string(pair.second.size()) + " past runs");
    row.caveats = join(c, "; ");
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
              "not comparable because"};
  for (const auto& r : rows) {
    t.rows.push_back({r.source, r.setting, r.transformer_ppl, r.grassmann_ppl, r.ratio, r.caveats});
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
           "perplexity): " + join(leaky, ", ") + ". ";
  }
  if (!unaudited.empty()) {
    out += "Left out as NOT AUDITED: " + join(unaudited, ", ") + ". ";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace grassaudit

namespace grassaudit {

std::string ratio_ranges(const std::vector<RatioRow>& rows) {
  struct Range {
    bool any = false;
    double lo = 0, hi = 0;
  };
  Range ranges[3];
  for (const auto& r : rows) {
    if (!r.ratio_value) continue;
    Range& g = ranges[static_cast<int>(r.origin)];
    if (!g.any) {
      g = {true, *r.ratio_value, *r.ratio_value};
    } else {
      g.lo = std::min(g.lo, *r.ratio_value);
      g.hi = std::max(g.hi, *r.ratio_value);
    }
  }
  const char* names[3] = {"paper", "public reproductions", "ours"};
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    if (!ranges[i].any) continue;
    std::string s = std::string(names[i]) + " " + fmt_ratio(ranges[i].lo);
    if (fmt_ratio(ranges[i].hi) != fmt_ratio(ranges[i].lo)) s += "-" + fmt_ratio(ranges[i].hi);
    parts.push_back(s);
  }
  return join(parts, "; ");
}

}  // namespace grassaudit
