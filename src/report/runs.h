#pragma once
// One training run's artifacts as the report sees them: reports/runs/<name>/summary.json (read
// by util/run_summary.h, its one schema), metrics.jsonl and audit.json. Loading validates the quarantine rule: a run whose audit says
// "leaky" may carry perplexities only under keys prefixed "quarantined_"; anything else is a
// malformed artifact (InputError naming the file).
#include <optional>
#include <string>
#include <vector>

#include "report/provenance.h"
#include "util/mixer_kind.h"
#include "util/run_summary.h"

namespace grassaudit {

// Whether a run's perplexities may be shown as valid.
enum class Standing {
  kValid,        // audit verdict "causal": perplexities are valid
  kQuarantined,  // audit verdict "leaky": perplexities shown only as quarantined
  kUnaudited,    // no audit block: perplexities withheld
};

// summary.json's audit block; the verdict is empty when the summary has none.
using RunAudit = SummaryAudit;

struct EvalPoint {
  double epoch = 0;
  double ppl = 0;
  bool quarantined = false;  // the line carried "quarantined_ppl"
};

// One "train" record of an LM run's metrics.jsonl: the training cross-entropy (nats per token)
// of the batch logged at that step, in training mode.
struct TrainPoint {
  double epoch = 0;  // fractional epoch, as logged (the record's "epoch")
  std::optional<long long> step;
  double loss = 0;
};

struct LeakCell {
  long long t = 0;  // 0-based output position
  long long d = 0;  // offset >= 1
  double effect = 0;
};

struct LeakMap {
  long long seq_len = 0;
  std::vector<LeakCell> cells;
};

// sample.json (train writes it for causal models): a short generation from the audited best weights.
struct RunSample {
  std::string prompt, text;
  std::optional<long long> seed, top_k;
  std::optional<double> temperature;
  std::string weights_sha256;
};

struct RunRecord {
  std::string name;  // folder name; the run's identity in the report
  std::string dir;
  std::string task;  // "lm" | "snli" ("lm" when absent)

  // Language-model runs (family and pairing are nullopt for SNLI runs). Parsed from
  // summary.json's "mixer"; its optional "family" and "pairing" keys must agree with it.
  std::optional<MixerFamily> family;
  std::optional<MixerPairing> pairing;
  std::string tokenizer;
  std::string dataset;  // optional: "dataset" (LM) or "features" (SNLI), free text
  std::optional<long long> seq_len, layers, d_model, rank, heads, threads, seed;
  std::vector<long long> offsets;
  std::string offset_mode;  // "per-layer" | "all" | ""
  std::string norm = "post";  // "post" | "pre"; summaries from before --norm are post-norm
  std::optional<double> params, epochs, tokens_seen, wall_seconds, tokens_per_second;
  std::string blas;
  // How the run ended and where its best validation was: "stopped_by" ("completed", "patience",
  // "max_tokens", "time_budget", "interrupted"; empty when not recorded), "best_epoch" (fractional,
  // as the trainer logs it), "epochs_planned" and "patience" (0: no early stopping).
  std::string stopped_by;
  std::optional<double> best_epoch;
  std::optional<long long> epochs_planned;
  long long patience = 0;
  RunAudit audit;
  std::optional<double> best_valid_ppl, test_ppl;                          // causal runs only
  std::optional<double> quarantined_best_valid_ppl, quarantined_test_ppl;  // leaky runs only

  // SNLI runs ("epochs" above is read for them too).
  std::string head;  // "grassmann" | "transformer"
  std::vector<long long> seeds;
  std::vector<double> val_acc, test_acc;
  std::optional<long long> train_pairs;
  std::string train_data;  // config.json data.train, e.g. "SNLI 1.0 dev, 90% not held out"

  // Which code produced the run (nullopt: older code, no provenance block) and which gate wrote
  // audit.json.
  std::optional<RunProvenance> provenance;
  AuditFileInfo audit_file;
  // Everything that defines the run except its seed: config.json (seed removed) when present,
  // else the summary's settings; plus the data hashes when provenance records them. Runs with
  // equal keys differ only by seed.
  std::string config_key;

  // metrics.jsonl (validation evaluations; training-loss records of LM runs only) and
  // audit.json (leak map), when present.
  std::vector<EvalPoint> evals;
  std::vector<TrainPoint> train;  // sorted by epoch; records without "epoch" or "loss" skipped
  std::optional<LeakMap> leak_map;
  std::optional<RunSample> sample;  // sample.json, when present
};

Standing standing_of(const RunRecord& run);

// The future window the offsets imply: sum of offsets (per-layer) or layers * max offset (all).
// nullopt when the run does not record enough to say.
std::optional<long long> expected_horizon(const RunRecord& run);

// Loads one run folder. InputError naming the file for bad JSON, wrong types, a plain
// perplexity key in a leaky run (or a quarantined key in a causal one), or an audit.json whose
// verdict contradicts the summary.
RunRecord load_run(const std::string& dir);

// Every subfolder of runs_dir holding a summary.json, sorted by folder name. A missing
// runs_dir gives an empty list; folders without summary.json are skipped.
std::vector<RunRecord> load_runs(const std::string& runs_dir);

}  // namespace grassaudit
