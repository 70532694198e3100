#pragma once
// What an audit is asked to do (AuditOptions) and the modes it runs the model in: the types every
// part of the engine shares, apart from the driver that runs them (audit/causality_audit.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

// The audit's two modes; their names ("eval" | "train") appear only at the edges: the JSON, the
// summary, the reports.
enum class AuditMode { kEval, kTrain };
const char* mode_name(AuditMode m);

// Relative effect that counts as a leak in float64 -- unless the model's measured rounding floor
// (PrecisionFloor) says its "float64" forward rounds coarser: every check is then decided against
// a threshold above that floor (audit/precision_switch.h).
constexpr double kLeakThreshold64 = 1e-9;

// Every field is described once, with its check and flag, in audit/audit_option_fields.h.
struct AuditOptions {
  int64_t seq_len = 32;
  int64_t batch = 32;        // probe rows per forward pass
  int64_t trials = 3;
  std::string mode = "both";  // the modes audited: eval | train | both
  bool eval_mode() const { return mode != "train"; }
  bool train_mode() const { return mode != "eval"; }
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
  bool localise = true;       // name where a leak enters (the units that read ahead), on a leaky verdict
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

  // Discrete routing (checks/routing_search.h): the probe rows each single-position search (a
  // side in a mode) may run; a search it ends before its plan is done leaves a lower bound.
  int64_t routing_budget = 8192;

  // Where the model runs and is probed: "cpu", "cuda", "cuda:N" (place_on_device, before the
  // audit starts; audit/audit_target.h).
  std::string device = "cpu";

  // The checks of the whole model, after the audit of its outputs (run_model_checks):
  // --incremental (audit/incremental_audit.h) and --property N (audit/property_search.h).
  bool incremental = false;
  std::optional<int64_t> property_cases;
};


// L, L-1, L/2, L/4, ... down to 2 (unique, descending).
std::vector<int64_t> audit_length_schedule(int64_t L);

}  // namespace grassaudit
