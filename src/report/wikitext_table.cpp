#include "report/wikitext_table.h"

#include "report/format.h"
#include "report/labels.h"

namespace grassaudit {

std::vector<std::string> wikitext_header() {
  return {"source", "mixer", "pairing", "tokenizer", "L", "layers", "params",
          "epochs / tokens seen", "validation ppl", "audit"};
}

namespace {

WikiRow paper_row(const Published& pub, const PaperLmRow& r) {
  WikiRow row;
  row.origin = RowOrigin::kPaper;
  row.source = r.source;
  row.mixer = family_name(r.family);
  // The paper has no code: its future pairing is only what the text says.
  row.pairing = r.pairing == Pairing::kFuture ? "future as written (called causal)"
                                              : pairing_words(r.pairing);
  if (!r.offsets.empty()) row.pairing += "; offsets " + fmt_offsets(r.offsets);
  row.tokenizer = pub.tokenizer;
  row.seq_len = std::to_string(r.seq_len);
  row.layers = std::to_string(r.layers);
  row.params = r.params_text;
  row.budget = fmt_epochs(pub.epochs) + " ep";
  if (r.batch) row.budget += ", batch " + std::to_string(*r.batch);
  row.valid_ppl = r.val_ppl_text;
  row.audit = pub.paper_audited;
  return row;
}

WikiRow repro_row(const Published& pub, const ReproLmRow& r, Family family,
                  const std::string& ppl) {
  WikiRow row;
  row.origin = RowOrigin::kReproduction;
  row.source = r.name;
  row.mixer = family_name(family);
  row.pairing = pairing_words(family == Family::kAttention ? Pairing::kCausalMask : r.pairing);
  if (family == Family::kGrassmann && r.offset_mode == "per-layer") {
    row.pairing += "; one offset per layer";
  }
  row.tokenizer = r.tokenizer;
  row.seq_len = std::to_string(r.seq_len);
  row.layers = std::to_string(r.layers);
  row.params = "not stated";
  row.budget = r.epochs ? fmt_epochs(*r.epochs) + " ep" : "not stated";
  row.valid_ppl = ppl;
  row.audit = pub.repro_audited;
  return row;
}

WikiRow our_row(const RunRecord& run) {
  WikiRow row;
  row.origin = RowOrigin::kOurs;
  row.run = run.name;
  row.source = "ours: " + run.name;
  row.mixer = mixer_label(run);
  row.pairing = pairing_label(run);
  row.tokenizer = tokenizer_label(run);
  row.seq_len = or_dash(run.seq_len);
  row.layers = or_dash(run.layers);
  row.params = run.params ? fmt_count(*run.params) : "?";
  row.budget = budget_label(run);
  row.valid_ppl = valid_ppl_cell(run);
  row.audit = audit_label(run);
  return row;
}

}  // namespace

std::vector<WikiRow> wikitext_rows(const Published& pub, const std::vector<RunRecord>& runs) {
  std::vector<WikiRow> rows;
  for (const auto& r : pub.lm) rows.push_back(paper_row(pub, r));
  for (const auto& r : pub.repro_lm) {
    if (r.transformer_ppl) {
      rows.push_back(repro_row(pub, r, Family::kAttention, r.transformer_ppl_text));
    }
    if (r.grassmann_ppl) {
      rows.push_back(repro_row(pub, r, Family::kGrassmann, r.grassmann_ppl_text));
    }
  }
  for (const auto& run : runs) {
    if (run.task == "lm") rows.push_back(our_row(run));
  }
  return rows;
}

std::string render_wikitext_table(const std::vector<WikiRow>& rows) {
  MdTable t;
  t.header = wikitext_header();
  for (const auto& r : rows) {
    t.rows.push_back({r.source, r.mixer, r.pairing, r.tokenizer, r.seq_len, r.layers, r.params,
                      r.budget, r.valid_ppl, r.audit});
  }
  return t.render();
}

}  // namespace grassaudit
