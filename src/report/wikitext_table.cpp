#include "report/wikitext_table.h"

#include "report/format.h"
#include "report/labels.h"
#include "report/limitations.h"
#include "report/seed_groups.h"

namespace grassaudit {

std::vector<std::string> wikitext_header() {
  return {"source", "mixer", "pairing", "tokenizer", "text", "L", "layers", "d_model", "params",
          "epochs / tokens seen", "seeds", "validation ppl", "audit"};
}

namespace {

const char kNotStated[] = "not stated";

WikiRow paper_row(const Published& pub, const PaperLmRow& r) {
  WikiRow row;
  row.origin = RowOrigin::kPaper;
  row.source = r.source;
  row.mixer = family_name(r.family);
  // The paper has no code: its future pairing is only what the text says.
  row.pairing = r.pairing == MixerPairing::kFuture ? "future as written (called causal)"
                                              : pairing_words(r.pairing);
  if (!r.offsets.empty()) row.pairing += "; offsets " + fmt_offsets(r.offsets);
  row.tokenizer = pub.tokenizer;
  row.text = pub.text.empty() ? kNotStated : pub.text;
  row.seq_len = std::to_string(r.seq_len);
  row.layers = std::to_string(r.layers);
  row.d_model = pub.d_model ? std::to_string(*pub.d_model) : kNotStated;
  row.params = r.params_text;
  row.budget = fmt_epochs(pub.epochs) + " ep";
  if (r.batch) row.budget += ", batch " + std::to_string(*r.batch);
  row.seeds = "not stated (single numbers)";
  row.valid_ppl = r.val_ppl_text;
  row.audit = pub.paper_audited;
  return row;
}

WikiRow repro_row(const Published& pub, const ReproLmRow& r, MixerFamily family) {
  const bool attn = family == MixerFamily::kAttention;
  WikiRow row;
  row.origin = RowOrigin::kReproduction;
  row.source = r.name;
  row.mixer = family_name(family);
  row.pairing = pairing_words(attn ? MixerPairing::kCausalMask : r.pairing);
  if (!attn && r.offset_mode == "per-layer") row.pairing += "; one offset per layer";
  if (!attn && r.offset_mode == "all") row.pairing += "; all offsets in every layer";
  if (!r.norm.empty()) row.pairing += "; " + r.norm + "-norm";
  row.tokenizer = r.tokenizer;
  row.text = r.text.empty() ? kNotStated : r.text;
  row.seq_len = std::to_string(r.seq_len);
  row.layers = std::to_string(r.layers);
  row.d_model = r.d_model ? std::to_string(*r.d_model) : kNotStated;
  const std::string& params = attn ? r.transformer_params_text : r.grassmann_params_text;
  row.params = params.empty() ? kNotStated : params;
  row.budget = r.epochs ? fmt_epochs(*r.epochs) + " ep" : kNotStated;
  if (r.epochs && r.epochs_basis == "default") row.budget += " (the script's default)";
  const auto& best = attn ? r.best_epoch_transformer : r.best_epoch_grassmann;
  if (best) row.budget += ", best epoch " + std::to_string(*best);
  row.seeds = r.seeds.empty() ? kNotStated : fmt_offsets(r.seeds);
  row.valid_ppl = attn ? r.transformer_ppl_text : r.grassmann_ppl_text;
  if (r.split == "test") row.valid_ppl += " (test split)";
  if (r.split.empty()) row.valid_ppl += " (split not stated)";
  row.audit = pub.repro_audited;
  return row;
}

std::string group_audit_label(const SeedGroup& g) {
  if (!g.pooled()) return audit_label(g.first());
  const std::string each = "each of " + std::to_string(g.runs.size()) + " runs";
  switch (g.standing) {
    case Standing::kValid:
      return "CAUSAL (" + each + ")";
    case Standing::kQuarantined:
      return "LEAKY (" + each +
             (g.leak_horizon ? "; horizon " + std::to_string(*g.leak_horizon) : "") + ")";
    case Standing::kUnaudited:
      break;
  }
  return "NOT AUDITED";
}

WikiRow our_row(const SeedGroup& g) {
  const RunRecord& run = g.first();
  WikiRow row;
  row.origin = RowOrigin::kOurs;
  row.run = run.name;
  row.source = "ours: " + g.label;
  row.mixer = mixer_label(run);
  row.pairing = pairing_label(run);
  row.tokenizer = tokenizer_label(run);
  row.text = text_label(run);
  row.seq_len = or_dash(run.seq_len);
  row.layers = or_dash(run.layers);
  row.d_model = or_dash(run.d_model);
  row.params = run.params ? fmt_count(*run.params) : "?";
  row.budget = budget_label(run);
  row.seeds = seeds_cell(g);
  row.valid_ppl = group_valid_cell(g);
  row.audit = group_audit_label(g);
  return row;
}

}  // namespace

std::vector<WikiRow> wikitext_rows(const Published& pub, const std::vector<RunRecord>& runs) {
  std::vector<WikiRow> rows;
  for (const auto& r : pub.lm) rows.push_back(paper_row(pub, r));
  for (const auto& r : pub.repro_lm) {
    if (r.transformer_ppl) rows.push_back(repro_row(pub, r, MixerFamily::kAttention));
    if (r.grassmann_ppl) rows.push_back(repro_row(pub, r, MixerFamily::kGrassmann));
  }
  for (const auto& g : seed_groups(runs)) rows.push_back(our_row(g));
  return rows;
}

std::string render_wikitext_table(const std::vector<WikiRow>& rows) {
  MdTable t;
  t.header = wikitext_header();
  for (const auto& r : rows) {
    t.rows.push_back({r.source, r.mixer, r.pairing, r.tokenizer, r.text, r.seq_len, r.layers,
                      r.d_model, r.params, r.budget, r.seeds, r.valid_ppl, r.audit});
  }
  return t.render();
}

}  // namespace grassaudit
