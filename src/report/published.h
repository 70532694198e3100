#pragma once
// The published numbers: reference/published/paper.json and reproductions.json.
#include <optional>
#include <string>
#include <vector>

#include "report/mixer_kind.h"

namespace grassaudit {

struct PaperLmRow {
  std::string model;     // "TransformerLM" | "GrassmannLM"
  Family family;         // "mixer": "attention" | "grassmann"
  Pairing pairing;       // "causal-mask" | "future-as-written" (kFuture); fits the family
  std::string schedule;  // "first" | "second"
  long long layers = 0;
  long long seq_len = 0;
  std::optional<long long> batch;
  double params = 0;
  std::string params_text;  // as printed, e.g. "12.59M"
  double val_ppl = 0;
  std::string val_ppl_text;  // as printed, e.g. "248.4"
  std::vector<long long> offsets;
  std::string source;
};

struct PaperSnliRow {
  std::string head;  // "transformer" | "grassmann"
  std::string model;
  double val_acc = 0;
  double test_acc = 0;
  std::string source;
};

struct ReproLmRow {
  std::string name;
  std::string repository;
  std::string tokenizer;
  std::string tokenizer_id;
  long long seq_len = 0;
  long long layers = 0;
  std::optional<double> epochs;
  std::string offset_mode;  // "" when not stated
  std::string text;         // "raw" | "tokenized" | "" (not stated)
  Pairing pairing;          // the Grassmann model's: "past" | "future"
  std::optional<double> transformer_ppl;
  std::optional<double> grassmann_ppl;
  std::string transformer_ppl_text;  // as printed, e.g. "245.10"
  std::string grassmann_ppl_text;
  std::string gap_published;  // e.g. "24%", "" when none
  std::string source;
};

struct ReproSnliNote {
  std::string name;
  std::string repository;
  std::string features;
  double accuracy_low = 0;
  double accuracy_high = 0;
  std::string accuracy_note;
  std::string defect;
  std::string source;
};

struct Published {
  // paper.json
  std::string arxiv;
  std::string paper_audited;  // "not audited (no code)"
  std::string wikitext_source;
  std::string tokenizer;     // "BERT WordPiece (bert-base-uncased)"
  std::string tokenizer_id;  // "wordpiece-bert-base-uncased"
  std::string text;          // "raw"
  double epochs = 0;         // 30
  std::vector<PaperLmRow> lm;
  std::vector<std::string> lm_notes;
  std::string snli_source;
  std::string snli_features;
  double snli_epochs = 0;
  std::vector<PaperSnliRow> snli;
  // reproductions.json
  std::string repro_audited;  // "past pairing in code, not audited here"
  std::vector<ReproLmRow> repro_lm;
  std::vector<ReproSnliNote> repro_snli;
};

// Reads <reference_dir>/published/paper.json and reproductions.json. Both are required:
// InputError naming the file when missing or malformed.
Published load_published(const std::string& reference_dir);

// The paper's Grassmann / Transformer row for (layers, L) and schedule, if any.
const PaperLmRow* find_paper_row(const Published& pub, Family family, long long layers,
                                 long long seq_len, const std::string& schedule = "first");

}  // namespace grassaudit
