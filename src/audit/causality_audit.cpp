#include "audit/causality_audit.h"

#include "audit/audit_refusal.h"

#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "audit/audit_prober.h"
#include "audit/audit_refusal.h"
#include "audit/contract_checks.h"
#include "audit/incremental_audit.h"
#include "audit/model_signature.h"
#include "audit/precision_switch.h"
#include "core/rng_guard.h"
#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {

InputSpec InputSpec::parse(const std::string& text) {
  // One perturbed input, no name: the model signature's parser (audit/model_signature.h) says
  // what a KIND is; here only tokens:V and features:C make sense.
  const InputBinding b = InputBinding::parse(text);
  if (!b.name.empty() || !b.perturbed())
    throw InputError(fmt::format("--input must be tokens:V or features:C, got '{}'", text));
  InputSpec s;
  s.kind = b.kind == InputBinding::Kind::kTokens ? Kind::kTokens : Kind::kFeatures;
  s.size = b.size;
  return s;
}

std::string InputSpec::str() const {
  if (kind == Kind::kTokens && !vocab_slots.empty()) return fmt::format("tokens:{}", fmt::join(vocab_slots, "+"));
  return fmt::format("{}:{}", kind == Kind::kTokens ? "tokens" : "features", size);
}

at::Tensor InputSpec::vocab_tensor() const {
  if (vocab_slots.empty()) return at::scalar_tensor(size, at::kLong);
  return at::tensor(vocab_slots, at::kLong);
}

std::vector<int64_t> audit_length_schedule(int64_t L) {
  std::vector<int64_t> out{L};
  if (L - 1 >= 2) out.push_back(L - 1);
  for (int64_t l = L / 2; l >= 2; l /= 2)
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  return out;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kCausal: return "causal";
    case Verdict::kLeaky: return "leaky";
  }
  throw std::logic_error("verdict_name: not a Verdict");
}

Verdict parse_verdict(const std::string& name) {
  for (Verdict v : {Verdict::kCausal, Verdict::kLeaky})
    if (name == verdict_name(v)) return v;
  throw InputError(fmt::format("verdict must be causal or leaky, got '{}'", name));
}

namespace {
constexpr ViolationKind kViolationKinds[] = {ViolationKind::kFuture, ViolationKind::kLength, ViolationKind::kBatch,
                                             ViolationKind::kWindow, ViolationKind::kStructural,
                                             ViolationKind::kIncremental};
}  // namespace

const char* violation_kind_name(ViolationKind k) {
  switch (k) {
    case ViolationKind::kFuture: return "future";
    case ViolationKind::kLength: return "length";
    case ViolationKind::kBatch: return "batch";
    case ViolationKind::kWindow: return "window";
    case ViolationKind::kStructural: return "structural";
    case ViolationKind::kIncremental: return "incremental";
  }
  throw std::logic_error("violation_kind_name: not a ViolationKind");
}

ViolationKind parse_violation_kind(const std::string& name) {
  std::vector<std::string> known;
  for (ViolationKind k : kViolationKinds) {
    if (name == violation_kind_name(k)) return k;
    known.emplace_back(violation_kind_name(k));
  }
  throw InputError(fmt::format("unknown violation kind '{}' ({})", name, fmt::join(known, ", ")));
}

std::ostream& operator<<(std::ostream& os, Verdict v) { return os << verdict_name(v); }
std::ostream& operator<<(std::ostream& os, ViolationKind k) { return os << violation_kind_name(k); }

const char* mode_name(AuditMode m) {
  switch (m) {
    case AuditMode::kEval: return "eval";
    case AuditMode::kTrain: return "train";
  }
  throw std::logic_error("mode_name: not an AuditMode");
}

namespace {

using Clock = std::chrono::steady_clock;

// Restores the target's dtype and mode and the global RNG state however the audit ends:
// the trainer's gate audits the live model and must not perturb training.
class TargetStateGuard {
 public:
  explicit TargetStateGuard(AuditTarget& t)
      : target_(t), dtype_(t.dtype()), training_(t.is_training()) {}
  ~TargetStateGuard() {
    try {
      target_.end_state_tracking();  // the module comes back as it was given
      if (target_.dtype() != dtype_) target_.to_dtype(dtype_, nullptr);
      target_.set_train(training_);
    } catch (...) {
    }
  }

 private:
  CpuRngGuard rng_;
  AuditTarget& target_;
  at::ScalarType dtype_;
  bool training_;
};

Verdict verdict_of(int64_t horizon) { return horizon > 0 ? Verdict::kLeaky : Verdict::kCausal; }

// What deciding the (mode, length) tables leaves for the summary.
struct DecidedTables {
  std::vector<int64_t> lens_planned;  // the schedule
  std::vector<AuditMode> modes_planned;
  std::vector<int64_t> lens_run;      // what was audited: shorter than planned if stopped early
  std::vector<AuditMode> modes_run;
  bool stopped_early = false;
  Pass first;                         // float32 (the target's own dtype): probes, largest effect
  Pass decisive;                      // the tables the verdict uses, in the precision that decided
  double threshold = 0.0;             // that precision's leak threshold (stays 0 while all is exact zeros)
  std::vector<std::string> notes;
};

// One (mode, length) table: float32 (the target's dtype), then -- only if something moved --
// the float64 re-run of the cuts that moved. Sets the decisive precision and threshold in `d`.
EffectTable decide_table(PrecisionSwitch& prec, Prober& prober, AuditMode mode, int64_t len, DecidedTables& d) {
  prec.to_own();
  EffectTable t32 = prober.probe_table(mode, len, d.first);
  const double moved = t32.max();
  if (moved == 0.0) return t32;  // exact zeros: nothing to tell apart
  if (prec.own() == at::kDouble) {  // the target is float64 already: its own table decides
    prec.to_float64();                // (measures its floor)
    d.threshold = prec.horizon_threshold();
    d.decisive.max_effect = std::max(d.decisive.max_effect, moved);
    return t32;
  }
  if (prec.to_float64()) {
    d.decisive.dtype = at::kDouble;
    d.threshold = prec.horizon_threshold();
    return prober.rerun_nonzero(mode, t32, d.decisive);
  }
  d.threshold = prec.horizon_threshold();
  d.decisive.max_effect = std::max(d.decisive.max_effect, moved);
  return t32;
}

// Table by table, lengths outer and modes inner (both modes of the main length come first), each
// decided before the next so that stop_when_leaky can end the schedule at the first proven leak.
// train_from_eval: the train-mode table of each length is the eval-mode one (proven equal).
DecidedTables decide_tables(PrecisionSwitch& prec, Prober& prober, const AuditOptions& opt,
                            const std::vector<int64_t>& lens, const std::vector<AuditMode>& modes,
                            bool train_from_eval) {
  const at::ScalarType own_dtype = prec.own();
  DecidedTables d;
  d.lens_planned = lens;
  d.modes_planned = modes;
  d.decisive.dtype = own_dtype;
  for (size_t li = 0; li < lens.size() && !d.stopped_early; ++li) {
    const int64_t len = lens[li];
    d.lens_run.push_back(len);
    for (size_t mi = 0; mi < modes.size() && !d.stopped_early; ++mi) {
      const AuditMode mode = modes[mi];
      if (std::find(d.modes_run.begin(), d.modes_run.end(), mode) == d.modes_run.end()) d.modes_run.push_back(mode);
      // Eval comes first at every length: a proven-equal train table is a copy of it.
      EffectTable chosen = mode == AuditMode::kTrain && train_from_eval
                               ? d.decisive.tables.at({AuditMode::kEval, len})
                               : decide_table(prec, prober, mode, len, d);
      const bool leaks = judge(chosen, d.threshold).horizon > opt.lookahead;
      d.decisive.tables[{mode, len}] = std::move(chosen);
      const bool last = li + 1 == lens.size() && mi + 1 == modes.size();
      if (leaks && opt.stop_when_leaky && !last) {
        d.stopped_early = true;
        d.notes.push_back(fmt::format(
            "stopped at {} mode, L={}: the leak is proven there (gate setting); the remaining (mode, length) "
            "tables were not audited, and the horizon is that of the tables audited",
            mode_name(mode), len));
      }
    }
  }
  if (prec.unavailable()) d.decisive.dtype = own_dtype;
  return d;
}

// Horizons per mode, per length and overall, and the first leaking cut (at the main length L
// when it leaks there, else the first audited table that leaks), from the decisive tables.
void summarise_horizons(const DecidedTables& d, int64_t L, AuditResult& r) {
  std::map<AuditMode, int64_t> mode_h;
  std::map<int64_t, int64_t> len_h;
  for (const auto& [key, table] : d.decisive.tables) {
    const auto [mode, len] = key;
    const auto v = judge(table, d.threshold);
    mode_h[mode] = std::max(mode_h[mode], v.horizon);
    len_h[len] = std::max(len_h[len], v.horizon);
    r.leak_horizon = std::max(r.leak_horizon, v.horizon);
    if (len == L && v.first_cut && (!r.first_leaking_cut || *v.first_cut < *r.first_leaking_cut))
      r.first_leaking_cut = v.first_cut;
  }
  if (!r.first_leaking_cut && r.leak_horizon > 0) {  // leaks only at other lengths
    for (int64_t len : d.lens_run)
      for (AuditMode mode : d.modes_run) {
        auto it = d.decisive.tables.find({mode, len});
        if (it == d.decisive.tables.end()) continue;  // not audited (stopped early)
        const auto v = judge(it->second, d.threshold);
        if (v.first_cut && !r.first_leaking_cut) r.first_leaking_cut = v.first_cut;
      }
  }
  // Where the dependence ends: the largest decisive cell at the horizon and one step beyond.
  auto effect_at = [&](int64_t D) -> std::optional<double> {
    std::optional<double> e;
    for (const auto& [key, table] : d.decisive.tables)
      for (int64_t t = 0; t + D < key.second; ++t) e = std::max(e.value_or(0.0), table.at(t, t + D));
    return e;
  };
  if (r.leak_horizon > 0) r.effect_at_horizon = effect_at(r.leak_horizon);
  r.effect_beyond_horizon = effect_at(r.leak_horizon + 1);
  for (AuditMode mode : d.modes_run) r.mode_horizons.emplace_back(mode_name(mode), mode_h[mode]);
  for (int64_t len : d.lens_run) r.length_horizons.emplace_back(len, len_h[len]);
}

// The leak map at the main length L: map[t][D-1] = effect of inputs from t+D on on y_t, the
// largest over the modes audited; cells at or below the threshold read 0.
std::vector<std::vector<double>> leak_map_at(const DecidedTables& d, int64_t L) {
  std::vector<std::vector<double>> map(static_cast<size_t>(L));
  for (int64_t t = 0; t < L; ++t) {
    auto& row = map[static_cast<size_t>(t)];
    for (int64_t D = 1; t + D < L; ++D) {
      double e = 0;
      for (AuditMode mode : d.modes_run)
        if (auto it = d.decisive.tables.find({mode, L}); it != d.decisive.tables.end())
          e = std::max(e, it->second.at(t, t + D));
      row.push_back(e > d.threshold ? e : 0.0);
    }
  }
  return map;
}

// Everything the result says about the tables: what ran, the precision, verdict and horizons,
// max effects, rounding_only, the leak map, and the notes gathered while deciding.
void summarise_tables(const DecidedTables& d, int64_t L, AuditResult& r) {
  r.seq_lens_planned = d.lens_planned;
  r.seq_lens = d.lens_run;
  for (AuditMode mode : d.modes_planned) r.modes_planned.emplace_back(mode_name(mode));
  for (AuditMode mode : d.modes_run) r.modes.emplace_back(mode_name(mode));
  r.stopped_early = d.stopped_early;
  r.notes.insert(r.notes.end(), d.notes.begin(), d.notes.end());
  r.max_effect_float32 = d.first.max_effect;
  r.precision = dtype_name(d.decisive.dtype);
  r.probes = d.first.probes + d.decisive.probes;

  summarise_horizons(d, L, r);
  r.max_effect = d.decisive.max_effect;
  r.rounding_only = r.leak_horizon == 0 && r.max_effect_float32 > 0.0;
  if (r.rounding_only && d.decisive.dtype == at::kDouble)
    r.notes.push_back(fmt::format(
        "rounding only: float32 showed future effects up to {:.3g} (relative) that fall to {:.3g} in float64, "
        "below the {:.3g} leak threshold: arithmetic mixes positions at rounding level, outputs do not depend on "
        "the future",
        r.max_effect_float32, r.max_effect, d.threshold));
  else if (r.rounding_only)
    r.notes.push_back(fmt::format(
        "rounding only (float32 decided): future effects up to {:.3g} (relative), below the float32 threshold {:g}",
        r.max_effect_float32, d.threshold));
  r.map_seq_len = L;
  r.leak_map = leak_map_at(d, L);
}

// Method 2 at the main length L in `mode`, in the target's current dtype (the decisive
// precision): gradients of y_t with respect to inputs s > t, relative to the largest gradient,
// against the same threshold as method 1. `mode_horizon`: method 1's horizon in that mode at L,
// which it must match (a leak only train mode has is no disagreement with eval-mode gradients).
GradientCheck gradient_check(Prober& prober, const AuditTarget& target, AuditMode mode, int64_t L, double threshold,
                             int64_t mode_horizon) {
  const auto G = prober.gradient_map(L, mode);  // G[t][s], L x L
  double max_all = 0, max_future = 0;
  int64_t horizon = 0;
  for (int64_t t = 0; t < L; ++t)
    for (int64_t s = 0; s < L; ++s) max_all = std::max(max_all, G[t][s]);
  if (!(max_all > 0)) max_all = 1;
  int64_t reach = 0;  // the farthest exactly non-zero gradient
  for (int64_t t = 0; t < L; ++t)
    for (int64_t s = t + 1; s < L; ++s) {
      const double rel = G[t][s] / max_all;
      max_future = std::max(max_future, rel);
      if (rel > threshold) horizon = std::max(horizon, s - t);
      if (G[t][s] != 0.0) reach = std::max(reach, s - t);
    }
  GradientCheck g;
  g.ran = true;
  g.mode = mode_name(mode);
  g.precision = dtype_name(target.dtype());
  g.max_future_grad = max_future;
  g.leak_horizon = horizon;
  g.structural_horizon = reach;
  const Verdict verdict = verdict_of(horizon);
  g.verdict = verdict;
  // A path that goes on past the nearer crossing decays through the threshold there: each
  // measure meets it at its own distance (the farther one may be the path's end, L - 1).
  const bool decaying = reach > std::min(horizon, mode_horizon);
  g.agrees = verdict == verdict_of(mode_horizon) && (horizon == mode_horizon || decaying);
  return g;
}

// Method 1's horizon in one mode at one length (0 when that table was not audited).
int64_t table_horizon(const DecidedTables& d, AuditMode mode, int64_t len) {
  const auto it = d.decisive.tables.find({mode, len});
  return it == d.decisive.tables.end() ? 0 : judge(it->second, d.threshold).horizon;
}

// "a", "a and b", "a, b and c".
std::string name_list(const std::vector<RedrawnTensor>& t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (i > 0) out += i + 1 == t.size() ? " and " : ", ";
    out += t[i].name;
  }
  return out;
}

std::string failure_line(const std::exception& e);

// The structural pass (causality_audit.h: StructuralPass): the exactly-zero tensors redrawn, the
// future audited again with the same contract, schedule and modes, the zeros put back however
// it ends. It never ends the audit: a failure is reported in not_run.
StructuralPass structural_pass(AuditTarget& target, const AuditOptions& opt) {
  StructuralPass sp;
  if (!opt.structural) {
    sp.weights_as_given = true;
    sp.skipped = "--weights-as-given: the weights were audited as given, exactly-zero tensors included";
    return sp;
  }
  try {
    sp.tensors = target.redraw_zero_parameters(opt.seed ^ 0x3C6EF372FE94F82BULL);
    if (sp.tensors.empty()) {
      sp.skipped = "no parameter tensor (biases aside) is exactly zero";
      return sp;
    }
    AuditOptions so = opt;
    so.structural = false;
    so.gradient_check = false;
    so.length_check = false;
    so.past_horizon = false;
    so.window.reset();
    const AuditResult s = run_causality_audit(target, so);
    sp.ran = true;
    sp.leak_horizon = s.leak_horizon;
    sp.max_effect = s.max_effect;
    sp.precision = s.precision;
    sp.verdict = s.leak_horizon > opt.lookahead ? Verdict::kLeaky : Verdict::kCausal;
    for (const auto& v : s.violations)
      if (v.kind == ViolationKind::kFuture) sp.evidence = v.evidence;
  } catch (const std::exception& e) {
    sp.ran = false;
    sp.not_run = failure_line(e);
    if (sp.not_run.empty()) sp.not_run = "the structural pass failed";
  }
  try {
    target.restore_redrawn_parameters();
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: the structural pass could not put the exactly-zero parameters back: {}",
                                 target.describe(), failure_line(e)));
  }
  return sp;
}

// Why a check failed, in one line: LibTorch's own text without its backtrace.
std::string failure_line(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return first_meaningful_line(c10->what_without_backtrace());
  return first_meaningful_line(e.what());
}

// Where the leak horizon was seen: the strongest decisive cell at distance leak_horizon.
Evidence future_evidence(const DecidedTables& d, const AuditResult& r) {
  Evidence ev;
  if (r.leak_horizon == 0) return ev;
  for (const auto& [key, table] : d.decisive.tables) {
    const auto v = judge(table, d.threshold);
    if (v.horizon != r.leak_horizon || v.effect <= ev.effect) continue;
    ev.mode = mode_name(key.first);
    ev.seq_len = key.second;
    ev.position = v.t;
    ev.cut = v.c;
    ev.effect = v.effect;
  }
  ev.precision = r.precision;
  ev.text = fmt::format("y_{} moved by {:.3g} (relative) when inputs from {} on were replaced ({} mode, L={}, {}): it "
                        "reads x_{}",
                        ev.position, ev.effect, ev.cut, ev.mode, ev.seq_len, ev.precision, ev.position + r.leak_horizon);
  return ev;
}

}  // namespace

namespace {
// Refuses (InputError, exit 2) a target whose outputs differ for the same batch: named state it
// updates, or else nondeterminism in that mode (noise drawn in forward, outside the RNG the audit
// resets). Two passes per audited mode.
// Returns whether an eval-mode pass drew from torch's default CPU generator.
bool check_repeatable(AuditTarget& target, Prober& prober, const std::vector<AuditMode>& modes, int64_t L) {
  bool eval_drew = false;
  for (AuditMode mode : modes) {
    const auto rep = prober.repeat_effect(mode, L);
    if (mode == AuditMode::kEval) eval_drew = rep.drew_random;
    if (rep.effect == 0.0) continue;
    if (!rep.changed.empty())
      throw AuditRefusal(AuditRefusal::Reason::kState, fmt::format(
          "{}: forward changes its state: {} changed during one call and the same input then gave outputs {:.3g} "
          "(relative) apart ({} mode): its outputs depend on earlier calls, so no causality verdict is possible; keep "
          "the state in the inputs, or reset it inside forward",
          target.describe(), rep.changed, rep.effect, mode_name(mode)));
    throw AuditRefusal(AuditRefusal::Reason::kNondeterministic, fmt::format(
        "{}: nondeterministic in {} mode: the same input moved outputs by {:.3g} (relative){}; the audit needs a "
        "model whose outputs are a function of its inputs (draw noise from torch's RNG in train mode only, or not at "
        "all)",
        target.describe(), mode_name(mode), rep.effect,
        mode == AuditMode::kTrain ? " with the RNG reset to the same state before each pass" : ""));
  }
  return eval_drew;
}
}  // namespace

void validate_audit_options(const AuditOptions& opt) {
  if (opt.trials < 1) throw InputError(fmt::format("--trials must be >= 1, got {}", opt.trials));
  if (opt.batch < 1) throw InputError(fmt::format("--batch must be >= 1, got {}", opt.batch));
  if (!opt.eval_mode && !opt.train_mode) throw InputError("audit needs at least one mode");
  if (opt.lookahead < 0) throw InputError(fmt::format("--allow-lookahead must be >= 0, got {}", opt.lookahead));
  if (opt.window && *opt.window < 1) throw InputError(fmt::format("--window must be >= 1, got {}", *opt.window));
}

AuditResult run_causality_audit(AuditTarget& target, const AuditOptions& opt) {
  const auto t0 = Clock::now();
  if (opt.seq_len < 2) throw InputError(fmt::format("--seq-len must be >= 2, got {}", opt.seq_len));
  validate_audit_options(opt);

  AuditResult r;
  r.lookahead = opt.lookahead;
  r.window = opt.window;
  r.target = target.describe();
  r.weights_sha256 = target.weights_hash();
  const std::vector<int64_t> lens = opt.seq_lens.empty() ? audit_length_schedule(opt.seq_len) : opt.seq_lens;
  std::vector<AuditMode> modes;
  if (opt.eval_mode) modes.push_back(AuditMode::kEval);
  if (opt.train_mode) modes.push_back(AuditMode::kTrain);

  TargetStateGuard guard(target);
  Prober prober(target, opt);
  const int64_t L = lens.front();

  PrecisionSwitch prec(target, prober, L);

  // The premise: the same input gives the same output. A model whose outputs move between
  // identical calls, through state it updates or noise it draws, has no causality verdict.
  const bool eval_drew_random = check_repeatable(target, prober, modes, L);
  if (opt.eval_mode && opt.train_mode) {
    r.train_mode_proof = target.train_mode_proof();
    // The graph scan is a list of random ops; the generator's state is the ground truth.
    if (r.train_mode_proof && r.train_mode_proof->proven && eval_drew_random)
      r.train_mode_proof = TrainModeProof{false, "not proven: an eval-mode pass moved torch's RNG state (forward draws "
                                                 "random numbers through an op the graph scan does not list)"};
    r.train_from_eval = opt.train_by_proof && r.train_mode_proof && r.train_mode_proof->proven;
    if (r.train_from_eval)
      r.notes.push_back(fmt::format("train mode is eval mode: {}, so every train-mode pass would repeat an eval-mode "
                                    "pass bit for bit; its batch, future and past tables are the eval-mode ones "
                                    "(--no-train-proof probes both)",
                                    r.train_mode_proof->why));
  }
  target.snapshot_state(/*restore=*/true);  // state that does not change outputs: put back after every pass

  // Non-vacuity first, in the target's own precision.
  r.past_effect = prober.past_effect(L);
  // Batch independence before the horizons: a coupled mode is then probed one row per pass.
  auto lap = Clock::now();
  auto timed = [&](const char* name) {
    const auto now = Clock::now();
    r.seconds_by_check.emplace_back(name, std::chrono::duration<double>(now - lap).count());
    lap = now;
  };
  // The modes that are probed: train mode proven equal to eval mode is not (its answers are eval's:
  // the same coupling, and a past table that can neither raise the horizon nor replace the evidence).
  std::vector<AuditMode> probed = modes;
  if (r.train_from_eval) probed.erase(std::remove(probed.begin(), probed.end(), AuditMode::kTrain), probed.end());
  if (opt.batch_check) check_batch(prec, prober, probed, L, r);
  if (r.train_from_eval && prober.isolated(AuditMode::kEval)) prober.isolate_rows(AuditMode::kTrain);
  timed("batch");
  const DecidedTables decided = decide_tables(prec, prober, opt, lens, modes, r.train_from_eval);
  summarise_tables(decided, L, r);
  const Evidence future_ev = future_evidence(decided, r);
  timed("future");
  // A leak proven under the gate's setting quarantines already: the other checks could only add to it.
  const bool settled = decided.stopped_early;
  if (opt.length_check && !settled) check_length(prec, prober, L, std::max(opt.lookahead, r.leak_horizon), r);
  timed("length");
  Evidence past_ev;
  if ((opt.past_horizon || opt.window) && !settled) past_ev = measure_past_horizon(prec, prober, probed, r.seq_lens, r);
  timed("past");
  judge_contract(future_ev, past_ev, r);
  // The gradient check runs in the decisive precision.
  if (target.dtype() != decided.decisive.dtype) target.to_dtype(decided.decisive.dtype, nullptr);

  r.vacuous = r.past_effect == 0.0;
  if (r.vacuous)
    r.notes.push_back(r.leak_horizon > 0
                          ? "no output depends on earlier inputs (replacing the first half moved nothing): this "
                            "model reads only the present and the future"
                          : "vacuous: no output depends on earlier inputs either (replacing the first half moved "
                            "nothing), so 'causal' says little about this model");

  if (opt.gradient_check && target.supports_gradient()) {
    // A second opinion must not cost the first one: whatever stops the gradient method (a
    // backward LibTorch refuses, a batch size the model does not run at) is reported, and the
    // perturbation verdict stands.
    const AuditMode grad_mode = opt.eval_mode ? AuditMode::kEval : AuditMode::kTrain;
    const int64_t mode_h = table_horizon(decided, grad_mode, L);
    try {
      r.gradient = gradient_check(prober, target, grad_mode, L, decided.threshold, mode_h);
    } catch (const std::exception& e) {
      r.gradient = GradientCheck{};
      r.gradient.mode = mode_name(grad_mode);
      r.gradient.not_run = failure_line(e);
      if (r.gradient.not_run.empty()) r.gradient.not_run = "the gradient pass failed";
      try {
        target.restore_state();
      } catch (...) {
      }
    }
    if (r.gradient.ran && r.gradient.structural_horizon) {
      r.structural_horizon = r.gradient.structural_horizon;
      // The gradient's path in its own mode against the horizon over every mode audited.
      r.decaying = r.leak_horizon > 0 && *r.structural_horizon > r.leak_horizon;
      if (r.leak_horizon == 0 && *r.structural_horizon > 0)
        r.notes.push_back(fmt::format(
            "the float64 gradient of some outputs with respect to later inputs is not exactly zero (up to distance "
            "{}, at most {:.3g} of the largest gradient), below the {:.3g} threshold: arithmetic reaches the future "
            "at rounding level, or a dependence too weak to tell from rounding",
            *r.structural_horizon, r.gradient.max_future_grad, decided.threshold));
    }
    if (r.gradient.ran && !r.gradient.agrees)
      r.notes.push_back(fmt::format("DISAGREEMENT: gradient method says {} (horizon {}, {} mode), perturbation at "
                                    "L={} in {} mode says horizon {}",
                                    verdict_name(r.gradient.verdict), r.gradient.leak_horizon, r.gradient.mode, L, r.gradient.mode,
                                    mode_h));
  }
  timed("gradient");
  if (target.supports_structural_pass()) {
    r.structural = structural_pass(target, opt);
    const StructuralPass& sp = *r.structural;
    const std::string names = name_list(sp.tensors);
    const bool one = sp.tensors.size() == 1;
    if (sp.ran && sp.leak_horizon > std::max(opt.lookahead, r.leak_horizon)) {
      Evidence ev = sp.evidence;
      ev.text = fmt::format("the future is read through {}, which {} exactly zero in these weights: one training step "
                            "makes it leak (with {} redrawn at the scale of {} siblings, {})",
                            names, one ? "is" : "are", one ? "it" : "them", one ? "its" : "their", sp.evidence.text);
      r.violations.push_back({ViolationKind::kStructural, sp.leak_horizon, opt.lookahead, ev});
      r.verdict = Verdict::kLeaky;
    } else if (sp.ran) {
      r.notes.push_back(fmt::format("structural pass: {} exactly zero in these weights; redrawn at the scale of {} "
                                    "siblings the model reads the future no further (horizon {})",
                                    names + (one ? " is" : " are"), one ? "its" : "their", sp.leak_horizon));
    }
  }
  timed("structural");
  // The precision notes qualify everything above them: first.
  r.notes.insert(r.notes.begin(), prec.notes().begin(), prec.notes().end());
  r.precision_floor = prec.floor();
  r.threshold = prec.floor() ? prec.horizon_threshold() : (r.precision == "float64" ? kLeakThreshold64 : 0.0);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

namespace {
nlohmann::json evidence_json(const Evidence& e) {
  if (e.empty()) return nullptr;
  nlohmann::json j;
  if (!e.mode.empty()) j["mode"] = e.mode;
  if (e.seq_len >= 0) j["seq_len"] = e.seq_len;
  if (e.prefix_len >= 0) j["prefix_len"] = e.prefix_len;
  if (e.position >= 0) j["position"] = e.position;
  if (e.cut >= 0) j["cut"] = e.cut;
  if (e.row >= 0) j["row"] = e.row;
  j["effect"] = e.effect;
  j["precision"] = e.precision;
  j["text"] = e.text;
  return j;
}
template <class T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json to_json(const PropertyCounterexample& c) {
  return {{"kind", violation_kind_name(c.kind)},   {"seq_len", c.seq_len},     {"cut", c.cut},       {"batch", c.batch},
          {"perturbation", c.perturbation}, {"mode", c.mode}, {"seed", c.seed}, {"positions", c.positions},
          {"effect", c.effect}, {"precision", c.precision}, {"cases", c.cases}};
}

nlohmann::json to_json(const AuditResult& r) {
  nlohmann::json j;
  j["verdict"] = verdict_name(r.verdict);
  j["leak_horizon"] = r.leak_horizon;
  j["max_effect"] = r.max_effect;
  j["first_leaking_cut"] = r.first_leaking_cut ? nlohmann::json(*r.first_leaking_cut) : nlohmann::json(nullptr);
  j["modes"] = r.modes;
  j["seq_lens"] = r.seq_lens;
  j["rounding_only"] = r.rounding_only;
  j["stopped_early"] = r.stopped_early;
  j["seq_lens_planned"] = r.seq_lens_planned;
  j["modes_planned"] = r.modes_planned;
  j["probes"] = r.probes;
  j["seconds"] = r.seconds;
  j["precision"] = r.precision;
  j["max_effect_float32"] = r.max_effect_float32;
  j["threshold"] = r.threshold;
  j["effect_at_horizon"] = opt_json(r.effect_at_horizon);
  j["effect_beyond_horizon"] = opt_json(r.effect_beyond_horizon);
  j["decaying"] = opt_json(r.decaying);
  j["structural_horizon"] = opt_json(r.structural_horizon);
  if (r.precision_floor) {
    const auto& f = *r.precision_floor;
    j["precision_floor"] = {{"value", f.measured ? nlohmann::json(f.value) : nlohmann::json(nullptr)},
                            {"precision", f.precision},
                            {"method", f.method},
                            {"threshold", f.threshold},
                            {"horizon_threshold", f.horizon_threshold},
                            {"float32_sized", f.float32_sized}};
  } else {
    j["precision_floor"] = nullptr;
  }
  j["train_mode_proof"] = r.train_mode_proof ? nlohmann::json{{"proven", r.train_mode_proof->proven},
                                                                {"why", r.train_mode_proof->why},
                                                                {"train_from_eval", r.train_from_eval}}
                                              : nlohmann::json(nullptr);
  j["vacuous"] = r.vacuous;
  j["past_effect"] = r.past_effect;
  j["target"] = r.target;
  if (!r.format.empty()) j["format"] = r.format;
  j["weights_sha256"] = r.weights_sha256;
  j["notes"] = r.notes;
  nlohmann::json mh = nlohmann::json::object();
  for (const auto& [m, h] : r.mode_horizons) mh[m] = h;
  j["mode_horizons"] = mh;
  nlohmann::json lh = nlohmann::json::object();
  for (const auto& [l, h] : r.length_horizons) lh[std::to_string(l)] = h;
  j["length_horizons"] = lh;
  if (r.gradient.ran) {
    j["gradient_check"] = {{"verdict", verdict_name(r.gradient.verdict)},
                           {"leak_horizon", r.gradient.leak_horizon},
                           {"max_future_grad", r.gradient.max_future_grad},
                           {"precision", r.gradient.precision},
                           {"mode", r.gradient.mode},
                           {"structural_horizon", opt_json(r.gradient.structural_horizon)},
                           {"agrees", r.gradient.agrees}};
  } else if (!r.gradient.not_run.empty()) {
    j["gradient_check"] = {{"verdict", nullptr}, {"not_run", r.gradient.not_run}, {"mode", r.gradient.mode}};
  } else {
    j["gradient_check"] = nullptr;
  }
  if (r.structural) {
    const auto& sp = *r.structural;
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : sp.tensors) tensors.push_back({{"name", t.name}, {"shape", t.shape}, {"scale", t.scale}});
    nlohmann::json sj{{"verdict", sp.ran ? nlohmann::json(verdict_name(sp.verdict)) : nlohmann::json(nullptr)},
                      {"leak_horizon", sp.ran ? nlohmann::json(sp.leak_horizon) : nlohmann::json(nullptr)},
                      {"tensors_redrawn", tensors},
                      {"weights_as_given", sp.weights_as_given}};
    if (sp.ran) {
      sj["max_effect"] = sp.max_effect;
      sj["precision"] = sp.precision;
    }
    if (!sp.skipped.empty()) sj["skipped"] = sp.skipped;
    if (!sp.not_run.empty()) sj["not_run"] = sp.not_run;
    j["structural"] = sj;
  } else {
    j["structural"] = nullptr;
  }
  nlohmann::json cells = nlohmann::json::array();
  for (size_t t = 0; t < r.leak_map.size(); ++t)
    for (size_t k = 0; k < r.leak_map[t].size(); ++k)
      if (r.leak_map[t][k] > 0) cells.push_back({t, k + 1, r.leak_map[t][k]});
  j["leak_map"] = {{"seq_len", r.map_seq_len}, {"cells", cells}};
  j["contract"] = {{"lookahead", r.lookahead}, {"window", opt_json(r.window)}};
  j["contract_holds"] = r.violations.empty();
  j["length_dependent"] = opt_json(r.length_dependent);
  j["length_evidence"] = evidence_json(r.length_evidence);
  j["batch_coupled"] = opt_json(r.batch_coupled);
  j["batch_evidence"] = evidence_json(r.batch_evidence);
  j["past_horizon"] = opt_json(r.past_horizon);
  nlohmann::json sec = nlohmann::json::object();
  for (const auto& [name, t] : r.seconds_by_check) sec[name] = t;
  j["seconds_by_check"] = sec;
  nlohmann::json violations = nlohmann::json::array();
  for (const auto& v : r.violations) {
    nlohmann::json vj{{"kind", violation_kind_name(v.kind)}, {"evidence", evidence_json(v.evidence)}};
    if (v.kind == ViolationKind::kFuture || v.kind == ViolationKind::kWindow || v.kind == ViolationKind::kStructural) {
      vj["horizon"] = v.horizon;
      vj["allowed"] = v.allowed;
    }
    violations.push_back(vj);
  }
  j["violations"] = violations;
  j["counterexample"] = r.counterexample ? to_json(*r.counterexample) : nlohmann::json(nullptr);
  j["incremental"] = r.incremental ? to_json(*r.incremental) : nlohmann::json(nullptr);
  // Every output leaf; one entry (the output itself) for a one-output target.
  nlohmann::json outs = nlohmann::json::array();
  const auto leaves = r.outputs.empty() ? std::vector<OutputResult>{output_result(r, "", r.output_shape)} : r.outputs;
  for (const auto& o : leaves) {
    nlohmann::json oj{{"path", o.path}};
    if (!o.shape.empty()) oj["shape"] = o.shape;  // unknown for built-in targets
    if (!o.skipped.empty()) {
      oj["skipped"] = o.skipped;
    } else {
      oj["verdict"] = verdict_name(o.verdict);
      oj["leak_horizon"] = o.leak_horizon;
      oj["max_effect"] = o.max_effect;
      oj["precision"] = o.precision;
      oj["rounding_only"] = o.rounding_only;
      nlohmann::json kinds = nlohmann::json::array();
      for (ViolationKind k : o.violations) kinds.push_back(violation_kind_name(k));
      oj["violations"] = kinds;
      oj["length_dependent"] = opt_json(o.length_dependent);
      oj["batch_coupled"] = opt_json(o.batch_coupled);
      oj["past_horizon"] = opt_json(o.past_horizon);
    }
    outs.push_back(oj);
  }
  j["outputs"] = outs;
  if (!r.outputs.empty()) j["worst_output"] = r.worst_output;
  return j;
}

OutputResult output_result(const AuditResult& r, const std::string& path, const std::vector<int64_t>& shape) {
  OutputResult o;
  o.path = path;
  o.shape = shape;
  o.verdict = r.verdict;
  o.leak_horizon = r.leak_horizon;
  o.max_effect = r.max_effect;
  o.precision = r.precision;
  o.rounding_only = r.rounding_only;
  for (const auto& v : r.violations) o.violations.push_back(v.kind);
  o.length_dependent = r.length_dependent;
  o.batch_coupled = r.batch_coupled;
  o.past_horizon = r.past_horizon;
  return o;
}

std::string leak_map_csv(const AuditResult& r) {
  std::string out = "t,D,effect\n";
  for (size_t t = 0; t < r.leak_map.size(); ++t)
    for (size_t k = 0; k < r.leak_map[t].size(); ++k)
      if (r.leak_map[t][k] > 0) out += fmt::format("{},{},{:.6g}\n", t, k + 1, r.leak_map[t][k]);
  return out;
}

namespace {
// A violation other than a future leak, named in the headline by what it is, with its one fact.
std::string headline_name(const Violation& v, const AuditResult& r) {
  const Evidence& e = v.evidence;
  if (v.kind == ViolationKind::kLength)
    return fmt::format("LENGTH-DEPENDENT (y_{} of a prefix of length {} differs by {:.3g})", e.position, e.prefix_len,
                       e.effect);
  if (v.kind == ViolationKind::kBatch) return fmt::format("BATCH-COUPLED (rows of a batch mix, {} mode)", e.mode);
  if (v.kind == ViolationKind::kStructural)
    return fmt::format("STRUCTURALLY LEAKY (horizon {} through {}, exactly zero in these weights)", v.horizon,
                       r.structural ? name_list(r.structural->tensors) : std::string("a zero tensor"));
  if (v.kind == ViolationKind::kWindow)
    return fmt::format("WINDOW EXCEEDED (reads {} back, the window allows {})", v.horizon, v.allowed);
  if (v.kind == ViolationKind::kIncremental) {
    if (!r.incremental || !r.incremental->consistent)
      return fmt::format("incremental path INCONSISTENT (step() differs from forward() by {:.3g} at y_{})", e.effect,
                         e.position);
    return fmt::format("incremental path NOT ISOLATED (outputs moved by {:.3g}: state kept outside the passed state)",
                       e.effect);
  }
  return std::string(violation_kind_name(v.kind)) + " VIOLATED";
}

}  // namespace

std::string kind_list(const std::vector<ViolationKind>& kinds) {
  std::vector<std::string> names;
  for (ViolationKind k : kinds) names.emplace_back(violation_kind_name(k));
  return fmt::format("{}", fmt::join(names, ","));
}

std::string summarize(const AuditResult& r) {
  // The headline: the causality audit's own verdict (a future read beyond the contract), then
  // every other violation by its own name, so a model whose only fault is its cache does not
  // read as a future leak of horizon 0.
  bool future = false;
  std::string others;
  for (const auto& v : r.violations) {
    if (v.kind == ViolationKind::kFuture)
      future = true;
    else
      others += "; " + headline_name(v, r);
  }
  std::string s = fmt::format("{}: {} (leak horizon {}, max effect {:.3g}, {} probes, {} precision, {:.2f} s){}\n",
                              r.target, future ? "LEAKY" : "causal", r.leak_horizon, r.max_effect, r.probes,
                              r.precision, r.seconds, others);
  if (r.leak_horizon > 0 && r.effect_at_horizon) {
    s += fmt::format("  leak horizon {} at threshold {:.3g} (effect {:.3g} there", r.leak_horizon, r.threshold,
                     *r.effect_at_horizon);
    if (r.effect_beyond_horizon) s += fmt::format(", {:.3g} at {}", *r.effect_beyond_horizon, r.leak_horizon + 1);
    s += ")";
    if (r.decaying && *r.decaying)
      s += fmt::format(", decaying; a path reaches {}", *r.structural_horizon);
    s += "\n";
  }
  if (r.first_leaking_cut) s += fmt::format("  first leaking cut: {}\n", *r.first_leaking_cut);
  s += fmt::format("  contract: lookahead {}, window {}: {}\n", r.lookahead, r.window ? std::to_string(*r.window) : "none",
                   r.violations.empty() ? "holds" : "VIOLATED");
  for (const auto& v : r.violations) s += fmt::format("  violation [{}]: {}\n", violation_kind_name(v.kind), v.evidence.text);
  auto tri = [](const std::optional<bool>& b) { return b ? (*b ? "yes" : "no") : "not checked"; };
  s += fmt::format("  length-dependent: {}; batch-coupled: {}; past horizon: {}\n", tri(r.length_dependent),
                   tri(r.batch_coupled), r.past_horizon ? std::to_string(*r.past_horizon) : "not measured");
  if (r.gradient.ran)
    s += fmt::format("  gradient check: {} (horizon {}, max future gradient {:.3g}, {} mode, {})\n", verdict_name(r.gradient.verdict),
                     r.gradient.leak_horizon, r.gradient.max_future_grad, r.gradient.mode,
                     r.gradient.agrees ? "agrees" : "DISAGREES");
  else if (!r.gradient.not_run.empty())
    s += fmt::format("  gradient check: not run ({})\n", r.gradient.not_run);
  if (r.structural && r.structural->ran)
    s += fmt::format("  structural pass: {} (horizon {}) with {} redrawn\n", verdict_name(r.structural->verdict),
                     r.structural->leak_horizon, name_list(r.structural->tensors));
  else if (r.structural && !r.structural->not_run.empty())
    s += fmt::format("  structural pass: not run ({})\n", r.structural->not_run);
  else if (r.structural && r.structural->weights_as_given)
    s += "  structural pass: skipped (--weights-as-given)\n";
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  if (!r.outputs.empty()) {
    s += fmt::format("  outputs ({}; the lines above are the worst, {}):\n", r.outputs.size(),
                     r.worst_output.empty() ? "the output itself" : r.worst_output);
    for (const auto& o : r.outputs) {
      const std::string name = o.path.empty() ? "(output)" : o.path;
      if (!o.skipped.empty())
        s += fmt::format("    {:<24} skipped: {}\n", name, o.skipped);
      else
        s += fmt::format("    {:<24} {} (leak horizon {}, max effect {:.3g}, {}{})\n", name,
                         o.verdict == Verdict::kLeaky ? "LEAKY" : "causal", o.leak_horizon, o.max_effect, o.precision,
                         o.violations.empty() ? "" : fmt::format(", violated: {}", kind_list(o.violations)));
    }
  }
  return s;
}

}  // namespace grassaudit

namespace grassaudit {

const char* refusal_name(AuditRefusal::Reason reason) {
  switch (reason) {
    case AuditRefusal::Reason::kState: return "state";
    case AuditRefusal::Reason::kNondeterministic: return "nondeterministic";
    case AuditRefusal::Reason::kNoIncremental: return "incremental";
  }
  return "?";
}

}  // namespace grassaudit
