#include "report/published.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "report/citations.h"
#include "report/format.h"
#include "report/json_io.h"
#include "util/error.h"
#include "util/parse_number.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const json& req_member(const json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || obj.at(key).is_null()) {
    throw InputError(where + ": missing '" + key + "'");
  }
  return obj.at(key);
}

const json& req_array(const json& obj, const std::string& key, const std::string& where) {
  const json& v = req_member(obj, key, where);
  if (!v.is_array()) throw InputError(where + ": '" + key + "' must be an array");
  return v;
}

void read_paper(Published& pub, const std::string& path) {
  const json j = parse_json_file(path);
  require_object(j, path);
  const json& paper = req_member(j, "paper", path);
  pub.arxiv = req_string(paper, "arxiv", path);
  pub.paper_audited = req_string(paper, "audited", path);

  const json& wt = req_member(j, "wikitext2", path);
  pub.wikitext_source = req_string(wt, "source", path);
  pub.tokenizer = req_string(wt, "tokenizer", path);
  pub.tokenizer_id = req_string(wt, "tokenizer_id", path);
  pub.text = opt_string(wt, "text", path).value_or("");
  pub.d_model = opt_integer(wt, "d_model", path);
  pub.heads = opt_integer(wt, "heads", path);
  pub.rank = opt_integer(wt, "rank", path);
  pub.norm = opt_string(wt, "norm", path).value_or("");
  pub.init = opt_string(wt, "init", path).value_or("");
  pub.optimizer_stated = wt.contains("optimizer") && !wt.at("optimizer").is_null();
  pub.epochs = req_number(wt, "epochs", path);
  size_t i = 0;
  for (const auto& r : req_array(wt, "rows", path)) {
    const std::string where = path + " (wikitext2.rows[" + std::to_string(i++) + "])";
    PaperLmRow row;
    row.model = req_string(r, "model", where);
    const std::string mixer = req_string(r, "mixer", where);
    const std::string pairing = req_string(r, "pairing", where);
    row.family = parse_family(mixer, where, "mixer");
    row.pairing = parse_paper_pairing(pairing, where);
    if (!pairing_fits(row.family, row.pairing)) {
      throw InputError(where + ": 'pairing' \"" + pairing + "\" does not fit 'mixer' \"" + mixer +
                       "\"");
    }
    row.schedule = req_string(r, "schedule", where);
    row.layers = req_integer(r, "layers", where);
    row.seq_len = req_integer(r, "seq_len", where);
    row.batch = opt_integer(r, "batch", where);
    row.params = req_number(r, "params", where);
    row.params_text = req_string(r, "params_text", where);
    row.val_ppl = req_number(r, "val_ppl", where);
    row.val_ppl_text = req_string(r, "val_ppl_text", where);
    row.offsets = opt_integer_array(r, "offsets", where);
    row.source = req_string(r, "source", where);
    pub.lm.push_back(row);
  }
  if (wt.contains("notes") && wt["notes"].is_array()) {
    for (const auto& n : wt["notes"]) {
      if (n.is_string()) pub.lm_notes.push_back(n.get<std::string>());
    }
  }

  const json& snli = req_member(j, "snli", path);
  pub.snli_source = req_string(snli, "source", path);
  pub.snli_features = req_string(snli, "features", path);
  pub.snli_epochs = opt_number(snli, "epochs", path).value_or(0);
  pub.snli_train_pairs = opt_integer(snli, "train_pairs", path);
  pub.snli_dataset_train_pairs = opt_integer(snli, "dataset_train_pairs", path);
  i = 0;
  for (const auto& r : req_array(snli, "rows", path)) {
    const std::string where = path + " (snli.rows[" + std::to_string(i++) + "])";
    PaperSnliRow row;
    row.head = req_string(r, "head", where);
    row.model = req_string(r, "model", where);
    row.val_acc = req_number(r, "val_acc", where);
    row.test_acc = req_number(r, "test_acc", where);
    row.source = req_string(r, "source", where);
    pub.snli.push_back(row);
  }
}

// Reproduction rows: fields a citation may name, and which of them are stated is read from the
// JSON itself (a non-null value), so the check cannot drift from the data.
const std::vector<std::string>& lm_setting_fields() {
  static const std::vector<std::string> f{
      "tokenizer", "text", "seq_len", "layers", "d_model", "heads", "epochs",
      "best_epoch_transformer", "best_epoch_grassmann", "offset_mode", "norm", "init", "seeds"};
  return f;
}
const std::vector<std::string>& lm_row_fields() {
  static const std::vector<std::string> f{
      "pairing", "split", "transformer_ppl", "grassmann_ppl", "transformer_params",
      "grassmann_params", "gap_published", "val_ppl_by_epoch"};
  return f;
}

std::vector<EpochPpl> read_epoch_curve(const json& curves, const std::string& key,
                                       const std::string& where) {
  std::vector<EpochPpl> out;
  if (!curves.contains(key) || curves.at(key).is_null()) return out;
  const json& arr = curves.at(key);
  if (!arr.is_array()) throw InputError(where + ": '" + key + "' must be an array of [epoch, ppl]");
  for (const auto& p : arr) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) {
      throw InputError(where + ": '" + key + "' must be an array of [epoch, ppl] pairs");
    }
    const EpochPpl e{p[0].get<double>(), p[1].get<double>()};
    if (e.epoch <= 0 || e.ppl <= 0 || (!out.empty() && e.epoch <= out.back().epoch)) {
      throw InputError(where + ": '" + key + "': epochs must increase and values be positive");
    }
    out.push_back(e);
  }
  return out;
}

// A published gap must agree with its own perplexities to the precision it is printed with.
PublishedGap read_gap(const json& g, const std::string& where) {
  if (!g.is_object()) {
    throw InputError(where + ": 'gap_published' must be an object {text, split, transformer_ppl, "
                     "grassmann_ppl} (the perplexities the gap was computed from)");
  }
  PublishedGap gap;
  gap.text = req_string(g, "text", where + " (gap_published)");
  gap.split = req_string(g, "split", where + " (gap_published)");
  gap.transformer_ppl = req_number(g, "transformer_ppl", where + " (gap_published)");
  gap.grassmann_ppl = req_number(g, "grassmann_ppl", where + " (gap_published)");
  if (gap.transformer_ppl <= 0 || gap.grassmann_ppl <= 0) {
    throw InputError(where + ": gap_published perplexities must be positive");
  }
  if (gap.split != "valid" && gap.split != "test") {
    throw InputError(where + ": gap_published 'split' must be \"valid\" or \"test\"");
  }
  if (gap.text.size() < 2 || gap.text.back() != '%') {
    throw InputError(where + ": gap_published 'text' must be a percentage like \"22.6%\"");
  }
  const std::string digits = gap.text.substr(0, gap.text.size() - 1);
  const std::optional<double> printed = parse_whole_double(digits);
  if (!printed) throw InputError(where + ": gap_published 'text' is not a number: " + gap.text);
  const size_t dot = digits.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
  const double computed = gap_percent(gap);
  if (std::fabs(computed - *printed) > 0.5 * std::pow(10.0, -decimals) + 1e-9) {
    throw InputError(where + ": gap_published \"" + gap.text + "\" does not match its perplexities (" +
                     fmt_shortest(gap.grassmann_ppl) + " / " + fmt_shortest(gap.transformer_ppl) +
                     " gives " + fmt::format("{:.2f}", computed) + "%)");
  }
  return gap;
}

void read_reproductions(Published& pub, const std::string& path) {
  const json j = parse_json_file(path);
  require_object(j, path);
  pub.repro_audited = req_string(j, "audited", path);
  if (j.contains("notes") && j["notes"].is_array()) {
    for (const auto& n : j["notes"]) {
      if (n.is_string()) pub.repro_notes.push_back(n.get<std::string>());
    }
  }
  std::vector<std::string> lm_known = lm_setting_fields();
  lm_known.insert(lm_known.end(), lm_row_fields().begin(), lm_row_fields().end());
  size_t i = 0;
  for (const auto& r : req_array(j, "wikitext2", path)) {
    const std::string where = path + " (wikitext2[" + std::to_string(i++) + "])";
    ReproLmRow row;
    row.name = req_string(r, "name", where);
    row.repository = req_string(r, "repository", where);
    row.url = opt_string(r, "url", where).value_or("");
    const json& s = req_member(r, "setting", where);
    require_object(s, where + " (setting)");
    row.tokenizer = req_string(s, "tokenizer", where);
    row.tokenizer_id = req_string(s, "tokenizer_id", where);
    row.seq_len = req_integer(s, "seq_len", where);
    row.layers = req_integer(s, "layers", where);
    row.d_model = opt_integer(s, "d_model", where);
    row.heads = opt_integer(s, "heads", where);
    row.epochs = opt_number(s, "epochs", where);
    row.epochs_basis = opt_choice(s, "epochs_basis", where, {"default"});
    row.best_epoch_transformer = opt_integer(s, "best_epoch_transformer", where);
    row.best_epoch_grassmann = opt_integer(s, "best_epoch_grassmann", where);
    row.offset_mode = opt_choice(s, "offset_mode", where, {"per-layer", "all"});
    row.text = opt_string(s, "text", where).value_or("");
    row.norm = opt_choice(s, "norm", where, {"pre", "post"});
    row.init = opt_string(s, "init", where).value_or("");
    row.seeds = opt_integer_array(s, "seeds", where);
    row.pairing = parse_pairing(req_string(r, "pairing", where), where);
    if (!pairing_fits(MixerFamily::kGrassmann, row.pairing)) {
      throw InputError(where + ": 'pairing' is the Grassmann model's: future or past, got \"" +
                       pairing_name(row.pairing) + "\"");
    }
    row.split = opt_choice(r, "split", where, {"valid", "test"});
    row.transformer_ppl = opt_number(r, "transformer_ppl", where);
    row.grassmann_ppl = opt_number(r, "grassmann_ppl", where);
    row.transformer_ppl_text = opt_string(r, "transformer_ppl_text", where)
                                   .value_or(row.transformer_ppl ? fmt_shortest(*row.transformer_ppl) : "");
    row.grassmann_ppl_text = opt_string(r, "grassmann_ppl_text", where)
                                 .value_or(row.grassmann_ppl ? fmt_shortest(*row.grassmann_ppl) : "");
    row.transformer_params = opt_number(r, "transformer_params", where);
    row.grassmann_params = opt_number(r, "grassmann_params", where);
    row.transformer_params_text =
        opt_string(r, "transformer_params_text", where)
            .value_or(row.transformer_params ? fmt_count(*row.transformer_params) : "");
    row.grassmann_params_text =
        opt_string(r, "grassmann_params_text", where)
            .value_or(row.grassmann_params ? fmt_count(*row.grassmann_params) : "");
    if (r.contains("gap_published") && !r.at("gap_published").is_null()) {
      row.gap = read_gap(r.at("gap_published"), where);
    }
    if (r.contains("val_ppl_by_epoch") && !r.at("val_ppl_by_epoch").is_null()) {
      const json& c = r.at("val_ppl_by_epoch");
      if (!c.is_object()) throw InputError(where + ": 'val_ppl_by_epoch' must be an object");
      row.transformer_by_epoch = read_epoch_curve(c, "transformer", where + " (val_ppl_by_epoch)");
      row.grassmann_by_epoch = read_epoch_curve(c, "grassmann", where + " (val_ppl_by_epoch)");
    }
    row.note = opt_string(r, "note", where).value_or("");
    std::vector<std::string> stated = stated_fields(s, lm_setting_fields());
    for (const auto& f : stated_fields(r, lm_row_fields())) stated.push_back(f);
    row.citations = read_citations(r, where, lm_known, stated);
    row.source = req_string(r, "source", where);
    pub.repro_lm.push_back(row);
  }
  const std::vector<std::string> snli_known{"features", "epochs", "accuracy_low", "accuracy_high",
                                            "defect"};
  i = 0;
  for (const auto& r : req_array(j, "snli", path)) {
    const std::string where = path + " (snli[" + std::to_string(i++) + "])";
    ReproSnliNote n;
    n.name = req_string(r, "name", where);
    n.repository = req_string(r, "repository", where);
    n.url = opt_string(r, "url", where).value_or("");
    n.features = req_string(r, "features", where);
    n.epochs = opt_number(r, "epochs", where);
    n.accuracy_low = req_number(r, "accuracy_low", where);
    n.accuracy_high = req_number(r, "accuracy_high", where);
    n.accuracy_note = opt_string(r, "accuracy_note", where).value_or("");
    n.defect = opt_string(r, "defect", where).value_or("");
    n.citations = read_citations(r, where, snli_known, stated_fields(r, snli_known));
    n.source = req_string(r, "source", where);
    pub.repro_snli.push_back(n);
  }
}

}  // namespace

Published load_published(const std::string& reference_dir) {
  const fs::path dir = fs::path(reference_dir) / "published";
  Published pub;
  read_paper(pub, (dir / "paper.json").string());
  read_reproductions(pub, (dir / "reproductions.json").string());
  return pub;
}

const PaperLmRow* find_paper_row(const Published& pub, MixerFamily family, long long layers,
                                 long long seq_len, const std::string& schedule) {
  for (const auto& r : pub.lm) {
    if (r.family == family && r.layers == layers && r.seq_len == seq_len &&
        r.schedule == schedule) {
      return &r;
    }
  }
  return nullptr;
}

const PaperLmRow* find_paper_row_same_len(const Published& pub, MixerFamily family, long long seq_len) {
  for (const auto& r : pub.lm) {
    if (r.family == family && r.seq_len == seq_len && r.schedule == "first") return &r;
  }
  return nullptr;
}

double gap_percent(const PublishedGap& gap) {
  return (gap.grassmann_ppl / gap.transformer_ppl - 1.0) * 100.0;
}

}  // namespace grassaudit
