#pragma once
// The published numbers: reference/published/paper.json and reproductions.json. Every stated
// field of a reproduction must name the file and commit it was read from (a citation);
// loading rejects an uncited field, a citation of an unknown field, and a published gap that
// its own perplexities contradict.
#include <optional>
#include <string>
#include <vector>

#include "util/mixer_kind.h"

namespace grassaudit {

struct PaperLmRow {
  std::string model;     // "TransformerLM" | "GrassmannLM"
  MixerFamily family;    // "mixer": "attention" | "grassmann"
  MixerPairing pairing;  // "causal-mask" | "future-as-written" (kFuture); fits the family
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

// Where a published field was read: a file of the reproduction's repository at a commit.
struct Citation {
  std::vector<std::string> fields;  // field names of the row this citation supports
  std::string path;                 // file path inside the repository
  std::string commit;               // 40 hex digits
  std::string says;                 // what the file says, shortened
};

// A gap as the source publishes it, with the perplexities it was computed from.
struct PublishedGap {
  std::string text;   // as printed, e.g. "22.6%"
  std::string split;  // "valid" | "test": which perplexities the gap is about
  double transformer_ppl = 0;
  double grassmann_ppl = 0;
};

struct EpochPpl {
  double epoch = 0;
  double ppl = 0;
};

struct ReproLmRow {
  std::string name;
  std::string repository;  // "owner/name"
  std::string url;         // "" when not recorded
  std::string tokenizer;
  std::string tokenizer_id;
  long long seq_len = 0;
  long long layers = 0;
  std::optional<long long> d_model, heads;
  std::optional<double> epochs;
  std::string epochs_basis;  // "default": the script's default, not stated for the run; "" stated
  std::optional<long long> best_epoch_transformer, best_epoch_grassmann;
  std::string offset_mode;  // "" when not stated
  std::string text;         // "raw" | "tokenized" | "" (not stated)
  std::string norm;         // "pre" | "post" | "" (not stated)
  std::string init;         // e.g. "N(0, 0.02)" | "" (not stated)
  std::vector<long long> seeds;  // empty: not stated
  MixerPairing pairing;     // the Grassmann model's: "past" | "future"
  std::string split;        // "valid" | "test" | "" (not stated)
  std::optional<double> transformer_ppl;
  std::optional<double> grassmann_ppl;
  std::string transformer_ppl_text;  // as printed, e.g. "245.10"
  std::string grassmann_ppl_text;
  std::optional<double> transformer_params, grassmann_params;
  std::string transformer_params_text, grassmann_params_text;  // as printed
  std::optional<PublishedGap> gap;  // nullopt: the source publishes no gap
  std::vector<EpochPpl> transformer_by_epoch, grassmann_by_epoch;  // validation ppl per epoch
  std::string note;
  std::vector<Citation> citations;
  std::string source;
};

struct ReproSnliNote {
  std::string name;
  std::string repository;
  std::string url;
  std::string features;
  std::optional<double> epochs;
  double accuracy_low = 0;
  double accuracy_high = 0;
  std::string accuracy_note;
  std::string defect;
  std::vector<Citation> citations;
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
  std::optional<long long> d_model, heads, rank;
  std::string norm;          // "post"
  std::string init;          // "" when the paper does not state it
  bool optimizer_stated = false;
  double epochs = 0;         // 30
  std::vector<PaperLmRow> lm;
  std::vector<std::string> lm_notes;
  std::string snli_source;
  std::string snli_features;
  double snli_epochs = 0;
  std::optional<long long> snli_train_pairs;          // as the paper states it (null: not stated)
  std::optional<long long> snli_dataset_train_pairs;  // the standard SNLI training split, for scale
  std::vector<PaperSnliRow> snli;
  // reproductions.json
  std::string repro_audited;  // "past pairing in code, not audited here"
  std::vector<std::string> repro_notes;
  std::vector<ReproLmRow> repro_lm;
  std::vector<ReproSnliNote> repro_snli;
};

// Reads <reference_dir>/published/paper.json and reproductions.json. Both are required:
// InputError naming the file when missing or malformed.
Published load_published(const std::string& reference_dir);

// The paper's Grassmann / Transformer row for (layers, L) and schedule, if any.
const PaperLmRow* find_paper_row(const Published& pub, MixerFamily family, long long layers,
                                 long long seq_len, const std::string& schedule = "first");

// The paper's first-schedule row for `family` at the same L (any depth), if any: the closest
// published setting when the depth has no row.
const PaperLmRow* find_paper_row_same_len(const Published& pub, MixerFamily family, long long seq_len);

// The published gap recomputed from its perplexities, in percent: (G / T - 1) * 100.
double gap_percent(const PublishedGap& gap);

}  // namespace grassaudit
