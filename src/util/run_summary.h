#pragma once
// summary.json, one run's record: its one schema. The trainers fill a RunSummary and write it
// with to_json (train/trainer.cpp for the language model, nli/nli_trainer.cpp for SNLI); the
// report reads it back with read_run_summary (report/runs.cpp).
//
// A key a run may lack is std::optional here and is then not written. Keys marked "written only"
// are part of the record but the report does not use them, so the reader leaves them empty:
// reading them would add checks that every committed summary would then have to pass. The file's
// key order is alphabetical (nlohmann::json's), whatever the order of the fields below.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/mixer_kind.h"

namespace grassaudit {

// "audit": the gate's verdict on the weights the run's numbers were measured on.
struct SummaryAudit {
  std::string verdict;  // "causal" | "leaky"
  std::optional<long long> leak_horizon;
  std::optional<double> max_effect;
  std::string weights_sha256;  // "" when not recorded (the trainer always records it)
};

// The keys of a language-model run (task "lm").
struct LmSummary {
  // "mixer": the public mixer name that stands for this family and pairing (util/mixer_kind.h).
  MixerKind mixer{MixerFamily::kGrassmann, MixerPairing::kPast};
  // "family" and "pairing" restate the mixer's; the reader refuses one that contradicts it.
  // The trainer writes "pairing" and not "family".
  std::optional<MixerFamily> family;
  std::optional<MixerPairing> pairing;
  std::optional<std::string> tokenizer;  // "word" | "wordpiece"
  std::optional<std::string> dataset;    // free text
  std::optional<long long> seq_len, layers, d_model;
  std::optional<std::string> norm;                // "post" | "pre"; a summary without it is post-norm
  std::optional<long long> rank;                  // Grassmann mixers
  std::optional<std::vector<long long>> offsets;  // Grassmann mixers
  std::optional<std::string> offset_mode;         // Grassmann mixers: "per-layer" | "all"
  std::optional<long long> heads;                 // attention
  std::optional<std::string> mixer_impl;          // written only: the reference path that trained, if one did
  std::optional<long long> d_ff, vocab_size;      // written only
  std::optional<std::string> preset;              // written only
  std::optional<double> epochs;                   // epochs trained, fractional
  std::optional<long long> epochs_planned;
  // "completed" | "patience" | "max_tokens" | "time_budget" | "interrupted"
  std::optional<std::string> stopped_by;
  std::optional<long long> patience;              // written when early stopping was on
  std::optional<double> time_budget_seconds;      // written only, when a budget was set
  std::optional<long long> steps;                 // written only
  std::optional<double> tokens_seen;              // an integer in the file; read as any number
  std::optional<std::string> device;              // written only
  std::optional<uint64_t> seed;
  std::optional<double> allreduce_seconds;        // written only, data-parallel runs
  std::optional<double> tokens_per_second;
  std::optional<double> best_epoch;               // fractional, where the best validation was
  std::optional<long long> best_step, valid_tokens, test_tokens;  // written only
  // Perplexities under the quarantine rule (util/quarantine.h): plain keys for a causal run,
  // quarantined_* for a leaky one.
  std::optional<double> best_valid_ppl, test_ppl;
  std::optional<double> quarantined_best_valid_ppl, quarantined_test_ppl;
};

// The keys of an SNLI run (task "snli"): one record over all its seeds.
struct SnliSummary {
  std::string head;                     // "grassmann" | "transformer"
  std::optional<std::string> features;  // the shared encoder, in words
  std::optional<std::string> protocol;  // written only
  // Per seed, in the order trained. val_acc is required; seeds and test_acc are empty when
  // absent and otherwise as long as val_acc.
  std::vector<uint64_t> seeds;
  std::vector<double> val_acc, test_acc;
  std::optional<double> val_acc_mean, val_acc_std, test_acc_mean, test_acc_std;  // written only
  std::optional<std::vector<long long>> best_epochs;                             // written only
  std::optional<long long> head_params, encoder_params, embedding_rows;          // written only
  std::optional<double> epochs;  // epochs planned: an integer in the file; read as any number
  std::optional<long long> batch;  // written only, as are the settings below up to train_pairs
  std::optional<double> lr;
  std::optional<long long> d_model, head_layers, encoder_layers, heads, d_ff;
  std::optional<double> dropout;
  std::optional<long long> max_sentence_tokens;
  std::optional<long long> train_pairs;
  std::optional<long long> val_pairs, test_pairs;              // written only
  std::optional<std::vector<double>> wall_seconds_per_seed;    // written only
  // Grassmann head, written only.
  std::optional<long long> d_proj, window, stride;
  std::optional<std::string> pairing;  // in words
  // Test accuracy with every Pluecker feature zeroed, per seed; shorter than seeds when a seed
  // was finished by a build that did not measure it, and then without mean and std.
  std::optional<std::vector<double>> test_acc_pluecker_zeroed;
  std::optional<double> test_acc_pluecker_zeroed_mean, test_acc_pluecker_zeroed_std;
};

struct RunSummary {
  std::optional<std::string> run;  // written only: the output folder's name
  std::string task = "lm";         // "lm" | "snli"; a summary without it is "lm"
  std::optional<SummaryAudit> audit;
  std::optional<double> params;  // an integer in the file; read as any number
  std::optional<long long> threads;
  std::optional<std::string> blas;
  std::optional<double> wall_seconds;
  std::optional<double> train_seconds;  // written only
  std::optional<long long> world_size;  // written only
  // "provenance" as the trainer wrote it (train/provenance.h), every key kept; null when absent
  // (older code). read_run_summary checks it; read_run_provenance (util/run_provenance.h) gives
  // what the report shows of it.
  nlohmann::json provenance;
  LmSummary lm;      // task "lm"
  SnliSummary snli;  // task "snli"
};

// The summary.json object: every field present, and the keys of `task` only.
nlohmann::json to_json(const RunSummary& summary);
// The audit block alone (also beside the numbers of `eval` and `generate`).
nlohmann::json to_json(const SummaryAudit& audit);

// Reads a summary.json object. InputError naming `where` for: a value of the wrong type, an audit
// block without a verdict "causal" or "leaky", a perplexity key against the quarantine rule, a
// task other than "lm" and "snli", a bad provenance block; for an LM run, a missing or unknown
// "mixer", a "family" or "pairing" that contradicts it, a "norm" other than "post" and "pre"; for
// an SNLI run, a missing "head" or "val_acc", or per-seed lists of different lengths.
RunSummary read_run_summary(const nlohmann::json& summary, const std::string& where);

}  // namespace grassaudit
