#include "report/published.h"

#include <filesystem>

#include "report/format.h"
#include "report/json_io.h"
#include "util/error.h"

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

long long req_integer(const json& obj, const std::string& key, const std::string& where) {
  auto v = opt_integer(obj, key, where);
  if (!v) throw InputError(where + ": missing '" + key + "'");
  return *v;
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

void read_reproductions(Published& pub, const std::string& path) {
  const json j = parse_json_file(path);
  require_object(j, path);
  pub.repro_audited = req_string(j, "audited", path);
  size_t i = 0;
  for (const auto& r : req_array(j, "wikitext2", path)) {
    const std::string where = path + " (wikitext2[" + std::to_string(i++) + "])";
    ReproLmRow row;
    row.name = req_string(r, "name", where);
    row.repository = req_string(r, "repository", where);
    const json& s = req_member(r, "setting", where);
    row.tokenizer = req_string(s, "tokenizer", where);
    row.tokenizer_id = req_string(s, "tokenizer_id", where);
    row.seq_len = req_integer(s, "seq_len", where);
    row.layers = req_integer(s, "layers", where);
    row.epochs = opt_number(s, "epochs", where);
    row.offset_mode = opt_string(s, "offset_mode", where).value_or("");
    row.text = opt_string(s, "text", where).value_or("");
    row.pairing = parse_pairing(req_string(r, "pairing", where), where);
    if (!pairing_fits(Family::kGrassmann, row.pairing)) {
      throw InputError(where + ": 'pairing' is the Grassmann model's: future or past, got \"" +
                       pairing_name(row.pairing) + "\"");
    }
    row.transformer_ppl = opt_number(r, "transformer_ppl", where);
    row.grassmann_ppl = opt_number(r, "grassmann_ppl", where);
    row.transformer_ppl_text = opt_string(r, "transformer_ppl_text", where)
                                   .value_or(row.transformer_ppl ? fmt_shortest(*row.transformer_ppl) : "");
    row.grassmann_ppl_text = opt_string(r, "grassmann_ppl_text", where)
                                 .value_or(row.grassmann_ppl ? fmt_shortest(*row.grassmann_ppl) : "");
    row.gap_published = opt_string(r, "gap_published", where).value_or("");
    row.source = req_string(r, "source", where);
    pub.repro_lm.push_back(row);
  }
  i = 0;
  for (const auto& r : req_array(j, "snli", path)) {
    const std::string where = path + " (snli[" + std::to_string(i++) + "])";
    ReproSnliNote n;
    n.name = req_string(r, "name", where);
    n.repository = req_string(r, "repository", where);
    n.features = req_string(r, "features", where);
    n.accuracy_low = req_number(r, "accuracy_low", where);
    n.accuracy_high = req_number(r, "accuracy_high", where);
    n.accuracy_note = opt_string(r, "accuracy_note", where).value_or("");
    n.defect = opt_string(r, "defect", where).value_or("");
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

const PaperLmRow* find_paper_row(const Published& pub, Family family, long long layers,
                                 long long seq_len, const std::string& schedule) {
  for (const auto& r : pub.lm) {
    if (r.family == family && r.layers == layers && r.seq_len == seq_len &&
        r.schedule == schedule) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace grassaudit
