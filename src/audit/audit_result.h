#pragma once
// What an audit found (AuditResult and its parts): the types the driver fills, the checks write
// into, and the JSON, the summary and the suites read (audit/causality_audit.h runs the audit).
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_cost.h"
#include "audit/audit_options.h"
#include "audit/audit_target.h"

namespace grassaudit {

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
enum class ViolationKind { kFuture, kLength, kBatch, kWindow, kStructural, kIncremental, kUnproven };
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

// The audit's two outcomes; their names ("causal" | "leaky") appear only at the edges: the JSON,
// the summary, the reports.
enum class Verdict { kCausal, kLeaky };
const char* verdict_name(Verdict v);
// InputError for anything but "causal" / "leaky" (what a suite or a summary.json says).
Verdict parse_verdict(const std::string& name);
// Their names, for test failure messages.
std::ostream& operator<<(std::ostream& os, Verdict v);
std::ostream& operator<<(std::ostream& os, ViolationKind k);

// Method 2, in one mode (eval when eval mode is audited, else train), compared with method 1's
// horizon in that mode at the main length. A check that was asked for and could not run (its
// backward failed, the model does not run at its batch size) says why in not_run; it never ends
// the audit, and the perturbation verdict stands.
struct GradientCheck {
  bool ran = false;
  std::string not_run;          // attempted and failed: why (ran false)
  std::string mode;             // mode_name(): the mode the gradients were taken in
  int64_t leak_horizon = 0;
  Verdict verdict() const { return leak_horizon > 0 ? Verdict::kLeaky : Verdict::kCausal; }
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

struct AuditResult;

// One output leaf of a structured output (audit/model_signature.h), audited or skipped.
struct OutputResult {
  std::string path;               // "" (the output itself), [0], ["logits"], [1][0]
  std::vector<int64_t> shape;     // at the main length, batch 2
  std::string skipped;            // why it was not audited; empty: audited
  // The leaf's own audit (audited leaves; null when skipped): its entry is written from it.
  std::shared_ptr<const AuditResult> audited;
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

// A length of the schedule the model does not run at, and why (its error's first line, or "NaN or
// Inf outputs").
struct SkippedLength {
  int64_t length = 0;
  std::string reason;
};

// Discrete routing (checks/routing_search.h): a selection over time seen in the ops a forward ran
// or in cells that switched between trials, and the single-position searches it started.
struct RoutingSearchRecord {
  std::string side;             // future | past
  std::string mode;             // eval | train
  int64_t seq_len = 0;
  int64_t horizon_before = 0;   // what the tables found
  int64_t horizon_after = 0;    // with the search
  int64_t rows = 0;             // probe rows it ran
  int64_t rounds = 0;           // rounds of fresh bases it ran
  bool exhausted = true;        // its whole plan ran within the budget (else a lower bound)
};
// A smallest unit that reads its own inputs' future: with only the unit's inputs from a cut on
// replaced (the rest held), its own outputs before the cut move (checks/localise_check.cpp).
// What the format can name; a field it cannot fill is nullopt.
struct LeakSite {
  std::string path;                   // "" the model's own code; "blocks.0.mix"
  std::optional<std::string> op;      // a class name, an op
  std::optional<std::string> source;  // "MoE.forward, model.py:57"
  std::optional<std::string> node;    // a graph node
  int64_t horizon = 0;                // its own horizon (future)
  ViolationKind violation = ViolationKind::kFuture;
  std::string mode;                   // the mode it was probed in
};

struct DiscreteRouting {
  struct Op {
    std::string op;     // e.g. aten::topk
    std::string where;  // e.g. "aten::topk over dim 1 of [32, 16, 4]"
  };
  std::vector<Op> ops;
  std::vector<std::string> trials;  // cells that switched between trials, one line per side
  int64_t budget = 0;               // probe rows each search may run
  std::vector<RoutingSearchRecord> searches;
};

struct AuditResult {
  // Leaky exactly when a check's findings violate the contract.
  Verdict verdict() const { return violations.empty() ? Verdict::kCausal : Verdict::kLeaky; }
  int64_t leak_horizon = 0;
  double max_effect = 0;         // largest relative future effect (decisive precision)
  std::optional<int64_t> first_leaking_cut;
  std::vector<std::string> modes;          // the modes audited (mode_name(): eval, train)
  std::vector<std::string> modes_planned;
  std::vector<int64_t> seq_lens;           // the lengths audited
  std::vector<int64_t> seq_lens_planned;   // the schedule (longer than seq_lens if stopped_early)
  bool stopped_early = false;              // stop_when_leaky ended the schedule after a leak
  std::string lengths_why;                 // why the schedule is shorter than the default one ("": it is not)
  std::vector<SkippedLength> lengths_skipped;  // lengths of the schedule where the model does not run
  // Causal, though float32 showed future effects: rounding cross-talk that float64 (or the float32
  // threshold) told apart from a leak.
  bool rounding_only() const { return leak_horizon == 0 && max_effect_float32 > 0.0; }
  int64_t probes = 0;
  double seconds = 0;
  std::string precision;         // float32 | float64: the precision that decided
  std::optional<PrecisionFloor> precision_floor;  // nullopt: no decision needed (exact zeros)
  // The leak (horizon) threshold decided against: the floor's horizon threshold where one was
  // measured, else kLeakThreshold64 for a float64 decision, 0 for exact zeros (nothing decided).
  double threshold() const {
    return precision_floor ? precision_floor->horizon_threshold : precision == "float64" ? kLeakThreshold64 : 0.0;
  }
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
  // Each mode's leak map at the main length map_seq_len (mode name, map): effect[t][D-1] for
  // D = 1..L-1-t (max over trials), cells at or below the threshold 0.
  int64_t map_seq_len = 0;
  std::vector<std::pair<std::string, std::vector<std::vector<double>>>> leak_maps_by_mode;
  // The leak map: the largest over the modes' maps, cell by cell (zeros where none ran).
  std::vector<std::vector<double>> leak_map() const;
  // Where the dependence ends: the largest decisive effect at the leak horizon (nullopt when it
  // is 0) and at the next distance (nullopt when no table is that long), and whether it decays
  // rather than stops: a path (the float64 gradient, structural_horizon) reaches beyond the
  // horizon (nullopt when the gradient method did not run).
  std::optional<double> effect_at_horizon;
  std::optional<double> effect_beyond_horizon;
  GradientCheck gradient;
  std::optional<int64_t> structural_horizon() const {
    return gradient.ran ? gradient.structural_horizon : std::nullopt;
  }
  std::optional<bool> decaying() const {
    const auto reach = structural_horizon();
    if (!reach) return std::nullopt;
    return leak_horizon > 0 && *reach > leak_horizon;
  }
  std::optional<StructuralPass> structural;  // nullopt: the target cannot redraw its parameters
  std::string weights_sha256;
  std::string target;
  // Where the model ran and was probed ("cpu", "cuda:0"); every check's float64 decisions ran
  // there too (CUDA has float64).
  std::string device = "cpu";
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
  // Discrete routing (nullopt: none seen). A search that ended on its budget leaves its horizon
  // a lower bound: a contract it does not prove is a kUnproven violation.
  std::optional<DiscreteRouting> discrete_routing;
  // Where a leak enters (nullopt: not looked for: a causal verdict, --no-localise, a target that
  // cannot be looked inside).
  std::optional<std::vector<LeakSite>> leak_sites;
  bool horizon_lower_bound = false;
  bool past_horizon_lower_bound = false;
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
  bool leaky() const { return verdict() == Verdict::kLeaky; }
};

// Adds what `from` spent (seconds_by_check, forwards_by_check, forwards) to `into`, check by
// check: the cost of an audit of several output leaves is the sum of theirs.
void add_costs(AuditResult& into, const AuditResult& from);
// Adds what `meter` recorded, section by section, to r's costs.
void take_costs(const CostMeter& meter, AuditResult& r);

}  // namespace grassaudit
