#pragma once
// The causality audit: is any output y_t a function of an input x_s with s > t?
//
// Method 1, perturb and compare (every model): for each cut c (1 <= c < L) the inputs after c
// are replaced by fresh random draws and outputs at positions <= c are compared with the
// unperturbed ones. Rows for many cuts share one forward pass. Eval mode compares rows of the
// same pass (identical shapes, so position-wise arithmetic is bit-identical); train mode runs
// paired passes with the RNG reset to the same state so dropout masks match row by row.
// Lengths: L, L-1, L/2, L/4, ..., 2. Trials: independent base sequences. Order: lengths outer,
// modes inner, each (mode, length) table decided (float32, then float64 where needed) before the
// next, so the gate can stop once a table proves a leak (AuditOptions::stop_when_leaky).
//
// Rounding versus leak: effects are measured relative to the output scale (max |y|). A causal
// model built from masked/sliced arithmetic shows exactly 0. If float32 shows anything non-zero,
// the cuts that showed it (every (mode, length, cut) with a non-zero cell; the same probe rows)
// are re-run in float64, where rounding cross-talk falls to ~1e-16 while a real dependence keeps
// its size; cells above a stated multiple of the model's measured float64 rounding floor are
// leaks (audit/precision_switch.h; kLeakThreshold64, 1e-9, where no floor could be measured), so
// a dependence that decays is followed as far as rounding allows. Cuts with exact float32
// zeros are not re-run: a dependence of 1e-6 of the output scale is ~8 float32 ulps and cannot
// vanish. A model whose float32 effects vanish in float64 is causal with rounding_only = true.
//
// Method 2, gradients (targets that expose their input embeddings): d y_t / d e_s for s > t must
// be exactly zero (float32, when method 1 saw exact zeros) or below the same threshold. In float64
// the farthest exactly non-zero gradient is the structural horizon: where a path reaches.
//
// Beyond the time axis (one file each in audit/checks/), decided by the same float32-then-float64 rule:
//   batch independence (eval and train mode): rows of a pass are replaced while others are kept;
//     a kept row that moves means rows mix (train-mode BatchNorm, a mean over the batch). The
//     horizons of a coupled mode are then measured one row per pass, so batch mixing is named
//     as such and never read as a future leak.
//   length independence (eval mode): y_t from the prefix x_0..x_{p-1} alone must equal y_t from
//     the full sequence for t <= p-1-max(K, leak horizon): what a position computes must not
//     depend on how many tokens follow (positions normalised by L, an FFT size chosen from L).
//   past horizon: the largest D with y_t depending on x_{t-D}, by replacing the inputs BEFORE
//     each cut (the mirror image of the future probe).
// A contract (lookahead K, window W) says what is allowed: y_t may read x_{t-W+1} .. x_{t+K}.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/audit_cost.h"
#include "audit/audit_target.h"

namespace grassaudit {

// Relative effect that counts as a leak in float64 -- unless the model's measured rounding floor
// (PrecisionFloor) says its "float64" forward rounds coarser: every check is then decided against
// a threshold above that floor (audit/precision_switch.h).
constexpr double kLeakThreshold64 = 1e-9;

struct AuditOptions {
  int64_t seq_len = 32;
  int64_t batch = 32;        // probe rows per forward pass
  int64_t trials = 3;
  bool eval_mode = true;
  bool train_mode = true;
  uint64_t seed = 1234;
  bool gradient_check = true;  // method 2, when the target supports it
  std::vector<int64_t> seq_lens;  // empty: the default schedule from seq_len
  // The shortest length the model runs at (a model file's declared range: file_audit_options):
  // the length check's prefixes and the property search's drawn lengths stay at or above it.
  // `lengths_why`: what the declared lengths took out of the schedule ("" when nothing).
  int64_t min_seq_len = 1;
  std::string lengths_why;
  // The gate's setting: once a (mode, length) table proves a leak (in the decisive precision),
  // stop. Proving causality still takes every table; proving a leak takes one, and the other
  // tables (with their float64 re-runs: every cut of a leaky model moves) could only refine the
  // horizon. The first table is eval mode at L, the setting perplexity is computed in. Off for
  // `grassaudit audit`, whose horizon covers the whole schedule.
  bool stop_when_leaky = false;

  // The contract: y_t may read x_{t+1..t+K} (streaming right context, codec lookahead) and,
  // with a window, nothing before x_{t-W+1}. Defaults: strictly causal, unbounded past.
  int64_t lookahead = 0;
  std::optional<int64_t> window;
  bool length_check = true;   // length independence (eval mode)
  bool batch_check = true;    // batch independence (every audited mode)
  bool past_horizon = true;   // measure the past horizon (always when a window is declared)
  // When both modes are audited and the target proves its train-mode forward is its eval-mode
  // forward (AuditTarget::train_mode_proof), the train-mode batch, future and past tables are
  // the eval-mode ones instead of a second probe of the same arithmetic. Off: probe both.
  bool train_by_proof = true;
  // The structural pass (StructuralPass below): parameters that are exactly zero are redrawn
  // and the future audited again. Off (--weights-as-given): the weights are audited as given,
  // for trained weights that are zero on purpose (pruning).
  bool structural = true;
  // The screen: each future table is probed first with the first trial's rows only; exact zeros
  // there stand for the table, anything else probes the whole table as without it. Saves the
  // other trials' rows of a causal model's tables; what it can miss is a dependence that trial 0's
  // inputs never show at any cut of a table (src/audit/README.md). Off (--probe-every-row):
  // every row of every table, every trial.
  bool screen = true;

  // The checks of the whole model, after the audit of its outputs (run_model_checks):
  // --incremental (audit/incremental_audit.h) and --property N (audit/property_search.h).
  bool incremental = false;
  std::optional<int64_t> property_cases;
};

// Where a property was seen to break: the cell that shows it, in the precision that decided.
// Fields that do not apply stay at -1 / empty. `text` is one line a person can check.
struct Evidence {
  std::string mode;          // eval | train
  int64_t seq_len = -1;      // the full length probed
  int64_t prefix_len = -1;   // length: the prefix run alone
  int64_t position = -1;     // the output position t that moved
  int64_t cut = -1;          // future: inputs from cut on replaced; window: inputs before cut replaced
  int64_t row = -1;          // batch: the kept row that moved
  double effect = 0;         // relative to the output scale
  std::string precision;
  std::string text;
  bool empty() const { return text.empty(); }
};

// The properties a contract can break, in the order results list them. Their names (future, length,
// batch, window, structural, incremental) are what the JSON, the summary and the suites read.
enum class ViolationKind { kFuture, kLength, kBatch, kWindow, kStructural, kIncremental };
const char* violation_kind_name(ViolationKind k);
// InputError naming the known kinds for any other text (suite expectations, JSON read back).
ViolationKind parse_violation_kind(const std::string& name);
// "future,length": kinds as the summary and the suite list them.
std::string kind_list(const std::vector<ViolationKind>& kinds);

// A broken property of the contract.
struct Violation {
  ViolationKind kind = ViolationKind::kFuture;
  int64_t horizon = 0;   // future/window: the measured horizon; length/batch: 0
  int64_t allowed = 0;   // future: K; window: W-1; length/batch: 0
  Evidence evidence;
};

// The audit's two outcomes and its two modes; their names ("causal" | "leaky", "eval" | "train")
// appear only at the edges: the JSON, the summary, the reports.
enum class Verdict { kCausal, kLeaky };
enum class AuditMode { kEval, kTrain };
const char* verdict_name(Verdict v);
const char* mode_name(AuditMode m);
// InputError for anything but "causal" / "leaky" (what a suite or a summary.json says).
Verdict parse_verdict(const std::string& name);
// Their names, for test failure messages.
std::ostream& operator<<(std::ostream& os, Verdict v);
std::ostream& operator<<(std::ostream& os, ViolationKind k);

// L, L-1, L/2, L/4, ... down to 2 (unique, descending).
std::vector<int64_t> audit_length_schedule(int64_t L);

// Method 2, in one mode (eval when eval mode is audited, else train), compared with method 1's
// horizon in that mode at the main length. A check that was asked for and could not run (its
// backward failed, the model does not run at its batch size) says why in not_run; it never ends
// the audit, and the perturbation verdict stands.
struct GradientCheck {
  bool ran = false;
  std::string not_run;          // attempted and failed: why (ran false)
  std::string mode;             // mode_name(): the mode the gradients were taken in
  Verdict verdict = Verdict::kCausal;
  int64_t leak_horizon = 0;
  double max_future_grad = 0;   // relative to the largest gradient norm
  std::string precision;
  // The farthest s - t with d y_t / d e_s exactly non-zero: a path exists, however weak (in
  // the precision the gradients were taken in; float32 only where the perturbation saw exact
  // zeros, or where float64 is unavailable).
  std::optional<int64_t> structural_horizon;
  // Same verdict, and the same horizon -- or a path goes on past the nearer of the two horizons:
  // a decaying dependence, whose threshold crossing each measure meets at its own distance.
  bool agrees = true;
};

// Vacuity of a switched-off path: a branch behind an exactly-zero parameter (a zero-initialised
// output projection, ReZero's alpha = 0, adaLN-Zero's gate, a zeroed LM head) adds nothing at
// these weights, so no perturbation or gradient sees what it reads; one training step later it
// reads it. The structural pass redraws those tensors at the scale of their siblings
// (AuditTarget::redraw_zero_parameters), audits the future again (same contract, schedule and
// modes; no gradient, length or past check), and puts the zeros back. A future read beyond the
// lookahead there that the weights as given do not show is a violation of its own kind,
// `structural`.
struct StructuralPass {
  bool ran = false;
  bool weights_as_given = false;       // --weights-as-given: skipped on request
  std::vector<RedrawnTensor> tensors;  // redrawn (empty: none is exactly zero)
  std::string skipped;                 // why it did not run (--weights-as-given, nothing zero)
  std::string not_run;                 // it was tried and failed: why
  Verdict verdict = Verdict::kCausal;  // of the future audit with the tensors redrawn (when ran)
  int64_t leak_horizon = 0;
  double max_effect = 0;
  std::string precision;
  Evidence evidence;                   // its future evidence (when it leaks)
};

// One output leaf of a structured output (audit/model_signature.h), audited or skipped.
struct OutputResult {
  std::string path;               // "" (the output itself), [0], ["logits"], [1][0]
  std::vector<int64_t> shape;     // at the main length, batch 2
  std::string skipped;            // why it was not audited; empty: audited
  Verdict verdict = Verdict::kCausal;  // audited leaves
  int64_t leak_horizon = 0;
  double max_effect = 0;
  std::string precision;
  bool rounding_only = false;
  std::vector<ViolationKind> violations;
  std::optional<bool> length_dependent, batch_coupled;
  std::optional<int64_t> past_horizon;
};

// The rounding floor of the precision that decided, measured on the model itself before any
// decision (audit/precision_switch.h). float32_sized: a float64 forward that rounds like float32.
struct PrecisionFloor {
  bool measured = false;     // false: not measurable (method says why); threshold is then the base
  double value = 0;          // relative to the output scale
  std::string precision;     // float64 | float32
  std::string method;        // how it was measured, one line
  double threshold = 0;      // what the comparisons across shapes (batch, length, incremental) were decided against
  double horizon_threshold = 0;  // what the horizons were decided against (audit/precision_switch.h)
  bool float32_sized = false;
};

// The minimal failing case of the property search (--property N, audit/property_search.h).
struct PropertyCounterexample {
  ViolationKind kind = ViolationKind::kFuture;  // the property that broke: future | window | length | batch
  int64_t seq_len = 0, cut = 0, batch = 0;
  std::string perturbation;  // what was replaced
  std::string mode;          // mode_name()
  uint64_t seed = 0;
  std::vector<int64_t> positions;  // the output positions that moved
  double effect = 0;
  std::string precision;
  int64_t cases = 0;         // cases the search ran
};

struct IncrementalResult;  // audit/incremental_audit.h

struct AuditResult {
  Verdict verdict = Verdict::kCausal;
  int64_t leak_horizon = 0;
  double max_effect = 0;         // largest relative future effect (decisive precision)
  std::optional<int64_t> first_leaking_cut;
  std::vector<std::string> modes;          // the modes audited (mode_name(): eval, train)
  std::vector<std::string> modes_planned;
  std::vector<int64_t> seq_lens;           // the lengths audited
  std::vector<int64_t> seq_lens_planned;   // the schedule (longer than seq_lens if stopped_early)
  bool stopped_early = false;              // stop_when_leaky ended the schedule after a leak
  std::string lengths_why;                 // why the schedule is shorter than the default one ("": it is not)
  bool rounding_only = false;
  int64_t probes = 0;
  double seconds = 0;
  std::string precision;         // float32 | float64: the precision that decided
  double threshold = 0;          // the leak (horizon) threshold decided against (0: float32 exact zeros, nothing decided)
  std::optional<PrecisionFloor> precision_floor;  // nullopt: no decision needed (exact zeros)
  double max_effect_float32 = 0;
  bool vacuous = false;
  double past_effect = 0;        // how much outputs move when only the past changes
  // The target's train-mode proof, as asked (nullopt: none offered, or only one mode audited);
  // train_from_eval: the train-mode tables were the eval-mode ones (proven and used).
  std::optional<TrainModeProof> train_mode_proof;
  bool train_from_eval = false;
  std::vector<std::string> notes;
  // Per mode horizon (eval/train), for the record.
  std::vector<std::pair<std::string, int64_t>> mode_horizons;
  std::vector<std::pair<int64_t, int64_t>> length_horizons;  // (L, horizon at L)
  // Leak map at the main length: effect[t][D-1] for D = 1..L-1-t (max over trials and modes).
  int64_t map_seq_len = 0;
  std::vector<std::vector<double>> leak_map;
  // The same map for each mode audited alone (mode name, map), for a picture per mode.
  std::vector<std::pair<std::string, std::vector<std::vector<double>>>> leak_maps_by_mode;
  // Where the dependence ends: the largest decisive effect at the leak horizon (nullopt when it
  // is 0) and at the next distance (nullopt when no table is that long), and whether it decays
  // rather than stops: a path (the float64 gradient, structural_horizon) reaches beyond the
  // horizon (nullopt when the gradient method did not run).
  std::optional<double> effect_at_horizon;
  std::optional<double> effect_beyond_horizon;
  std::optional<bool> decaying;
  std::optional<int64_t> structural_horizon;
  GradientCheck gradient;
  std::optional<StructuralPass> structural;  // nullopt: the target cannot redraw its parameters
  std::string weights_sha256;
  std::string target;
  std::string format;  // a model file's format (torchscript | torch.export); "" for built-in models

  // The contract audited and the properties beyond the time axis (see the top of this file).
  int64_t lookahead = 0;
  std::optional<int64_t> window;
  std::optional<bool> length_dependent;   // nullopt: not checked
  Evidence length_evidence;
  // What the length check measured: (prefix length p, the largest decisive effect of y_t from the
  // prefix alone against the full run); empty when it compared nothing.
  std::vector<std::pair<int64_t, double>> length_profile;
  std::optional<bool> batch_coupled;      // nullopt: not checked
  Evidence batch_evidence;
  // A coupled mode's kept rows: the largest decisive effect at each position t when the other rows
  // change; empty when no mode is coupled.
  std::vector<double> batch_profile;
  std::optional<int64_t> past_horizon;    // nullopt: not measured
  std::vector<Violation> violations;      // empty: every property holds within the contract
  // Wall seconds per check (future tables incl. their float64 re-runs, batch, length, past,
  // gradient, property), for the cost of each; the precision floor (the float64 forward test and
  // the floor measurement) is its own entry, "precision_floor", whichever check first needed it.
  std::vector<std::pair<std::string, double>> seconds_by_check;
  // Forward passes by check (the same names) and in all, by dtype, and dtype conversions
  // (audit/audit_cost.h); unit_rows x unit_len is the unit a forward-equivalent counts: one plain
  // forward of the audited batch (--batch rows at the main length).
  std::vector<std::pair<std::string, ForwardLedger>> forwards_by_check;
  ForwardLedger forwards;
  int64_t unit_rows = 0, unit_len = 0;
  // Set by the property search (--property N) when it finds a failing case.
  std::optional<PropertyCounterexample> counterexample;
  // Set by the incremental audit (--incremental, audit/incremental_audit.h).
  std::shared_ptr<const IncrementalResult> incremental;
  // Structured outputs (run_output_audits): every leaf, audited or skipped; the fields above
  // are those of `worst_output`. Empty for a target with one output (to_json then lists it).
  std::vector<OutputResult> outputs;
  std::string worst_output;
  std::vector<int64_t> output_shape;  // a one-output TorchScript model: its shape (batch 2, main length)

  // verdict is leaky exactly when a property of the contract is violated: a future leak beyond
  // the lookahead, length dependence, batch coupling or a read beyond the window. With the
  // default contract that is any future dependence, plus length and batch.
  bool leaky() const { return verdict == Verdict::kLeaky; }
};

// Adds what `from` spent (seconds_by_check, forwards_by_check, forwards) to `into`, check by
// check: the cost of an audit of several output leaves is the sum of theirs.
void add_costs(AuditResult& into, const AuditResult& from);
// Adds what `meter` recorded, section by section, to r's costs.
void take_costs(const CostMeter& meter, AuditResult& r);

// InputError naming the first bad option (batch, trials, lookahead, window; seq_len >= 2 once set).
void validate_audit_options(const AuditOptions& options);

// Throws InputError for targets that fail, return the wrong shape, or NaN/Inf outputs.
AuditResult run_causality_audit(AuditTarget& target, const AuditOptions& options);

// The whole-model checks the options ask for (options.property_cases, options.incremental), after
// the audit r of the target's outputs, each adding to r (`output`: the leaf --output named).
void run_model_checks(AuditTarget& target, const AuditOptions& options, const std::optional<std::string>& output,
                      AuditResult& r);

nlohmann::json to_json(const AuditResult& r);
nlohmann::json to_json(const PropertyCounterexample& c);
// The summary of an audited output leaf (path and shape as given).
OutputResult output_result(const AuditResult& r, const std::string& path, const std::vector<int64_t>& shape);
// The leak map as CSV: t,D,effect (rows with effect > 0 only).
std::string leak_map_csv(const AuditResult& r);
// Human summary, a few lines.
std::string summarize(const AuditResult& r);

}  // namespace grassaudit
