#include "audit/causality_audit.h"

#include "audit/audit_refusal.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/ScalarType.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "audit/audit_option_fields.h"
#include "audit/audit_prober.h"
#include "audit/checks/check.h"
#include "audit/checks/json_fields.h"
#include "audit/model_signature.h"
#include "audit/precision_switch.h"
#include "runtime/rng_guard.h"
#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {

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
// Every kind with its name, in the enum's order: the one table a new kind is added to.
constexpr std::pair<ViolationKind, const char*> kViolationKinds[] = {
    {ViolationKind::kFuture, "future"},         {ViolationKind::kLength, "length"},
    {ViolationKind::kBatch, "batch"},           {ViolationKind::kWindow, "window"},
    {ViolationKind::kStructural, "structural"}, {ViolationKind::kIncremental, "incremental"},
    {ViolationKind::kUnproven, "unproven"}};
}  // namespace

const char* violation_kind_name(ViolationKind k) {
  for (const auto& [kind, name] : kViolationKinds)
    if (kind == k) return name;
  throw std::logic_error("violation_kind_name: not a ViolationKind");
}

ViolationKind parse_violation_kind(const std::string& name) {
  std::vector<std::string> known;
  for (const auto& [kind, kind_name] : kViolationKinds) {
    if (name == kind_name) return kind;
    known.emplace_back(kind_name);
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

// Restores the target's mode and tracked state and the global RNG state however the audit ends
// (its dtype: the PrecisionSwitch): the trainer's gate audits the live model and must not perturb
// training.
class TargetStateGuard {
 public:
  explicit TargetStateGuard(AuditTarget& t) : target_(t), training_(t.is_training()) {}
  ~TargetStateGuard() {
    try {
      target_.end_state_tracking();  // the module comes back as it was given
      target_.set_train(training_);
    } catch (...) {
    }
  }

 private:
  CpuRngGuard rng_;
  AuditTarget& target_;
  bool training_;
};

}  // namespace

namespace {
// Refuses (InputError, exit 2) a target whose outputs differ for the same batch: named state it
// updates, or else nondeterminism in that mode (noise drawn in forward, outside the RNG the audit
// resets). Two passes per audited mode.
// Returns whether an eval-mode pass drew from torch's default CPU generator.
bool check_repeatable(AuditTarget& target, Prober& prober, PrecisionSwitch& prec, const std::vector<AuditMode>& modes,
                      int64_t L) {
  bool eval_drew = false;
  const InPrecision own = prec.in_own();
  for (AuditMode mode : modes) {
    const auto rep = prober.repeat_effect(own, mode, L);
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

namespace {

// The checks of one audit of an output: every per-output check, or inside the structural pass
// those that run there.
bool runs_here(const Check& check, bool structural_pass) {
  return check.stage() == Check::Stage::kPerOutput && (!structural_pass || check.in_structural_pass());
}

// One audit over the schedule `lens` (the first is the length asked for); a ForwardFailure from
// any length ends it, the model put back as it came.
AuditResult audit_at_lengths(AuditTarget& target, const AuditOptions& opt, const std::vector<int64_t>& lens,
                             CostMeter& meter, bool structural_pass) {
  AuditResult r;
  r.lookahead = opt.lookahead;
  r.window = opt.window;
  r.lengths_why = opt.lengths_why;
  r.target = target.describe();
  r.device = target.device().str();
  r.weights_sha256 = target.weights_hash();
  std::vector<AuditMode> modes;
  if (opt.eval_mode()) modes.push_back(AuditMode::kEval);
  if (opt.train_mode()) modes.push_back(AuditMode::kTrain);

  TargetStateGuard guard(target);
  Prober prober(target, opt);
  const int64_t L = lens.front();

  PrecisionSwitch prec(target, prober, L);

  // The premise: the same input gives the same output. A model whose outputs move between
  // identical calls, through state it updates or noise it draws, has no causality verdict.
  const bool eval_drew_random = [&] {
    const CostSection section("repeatability");
    return check_repeatable(target, prober, prec, modes, L);
  }();
  if (opt.eval_mode() && opt.train_mode()) {
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

  // The modes that are probed: train mode proven equal to eval mode is not (its answers are eval's:
  // the same coupling, and a past table that can neither raise the horizon nor replace the evidence).
  std::vector<AuditMode> probed = modes;
  if (r.train_from_eval) probed.erase(std::remove(probed.begin(), probed.end(), AuditMode::kTrain), probed.end());
  AuditRun run{target, opt, prober, prec, L, lens, modes, probed, r, {}};
  for (const auto& check : registered_checks()) {
    if (!runs_here(*check, structural_pass) || !check->wanted(run)) continue;
    const CostSection section(check->name());
    check->run(run);
  }
  // The verdict: leaky exactly when a check's findings violate the contract.
  for (const auto& check : registered_checks())
    if (runs_here(*check, structural_pass)) check->judge(run, r.violations);
  std::stable_sort(r.violations.begin(), r.violations.end(),
                   [](const Violation& a, const Violation& b) { return a.kind < b.kind; });
  // What explains a leaky verdict (where the leak enters), never inside the structural pass.
  if (r.leaky() && !structural_pass)
    for (const auto& check : registered_checks()) {
      if (check->stage() != Check::Stage::kAfterVerdict || !check->wanted(run)) continue;
      const CostSection section(check->name());
      check->run(run);
    }
  prec.restore_own();  // the model goes back as it came, counted (the switch's destructor would, uncounted)
  // The precision notes qualify everything above them: first.
  r.notes.insert(r.notes.begin(), prec.notes().begin(), prec.notes().end());
  r.precision_floor = prec.floor();
  r.unit_rows = opt.batch;
  r.unit_len = L;
  take_costs(meter, r);
  return r;
}

// The audit over the schedule, with the lengths where the model does not run skipped.
AuditResult audit_schedule(AuditTarget& target, const AuditOptions& opt, bool structural_pass) {
  const ExactCudaMath exact_math;  // every probe and decision in IEEE float32 / float64 (no TF32)
  const auto t0 = Clock::now();
  if (opt.seq_len < 2) throw InputError(fmt::format("--seq-len must be >= 2, got {}", opt.seq_len));
  validate_audit_options(opt);
  std::vector<int64_t> lens = opt.seq_lens.empty() ? audit_length_schedule(opt.seq_len) : opt.seq_lens;
  // A length of the schedule where the model does not run (it raises, or returns NaN or Inf) is
  // skipped and the audit starts again without it; the forwards already spent stay in the costs.
  // The length asked for (the first) failing is the model's failure: refused.
  std::vector<SkippedLength> skipped;
  CostMeter meter;
  const CostScope metered(meter);
  for (;;) {
    try {
      AuditResult r = audit_at_lengths(target, opt, lens, meter, structural_pass);
      std::stable_sort(skipped.begin(), skipped.end(),
                       [](const SkippedLength& a, const SkippedLength& b) { return a.length > b.length; });
      r.lengths_skipped = skipped;
      std::vector<std::string> non_finite;
      for (const auto& s : skipped)
        if (s.reason == kNonFiniteReason) non_finite.push_back(std::to_string(s.length));
      if (!non_finite.empty())
        r.notes.push_back(fmt::format("the model returns NaN or Inf at L {} (a finding of its own: the audit could "
                                      "not probe there)",
                                      fmt::join(non_finite, ", ")));
      r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      return r;
    } catch (const ForwardFailure& e) {
      const auto it = std::find(lens.begin() + 1, lens.end(), e.len());
      if (it == lens.end()) throw;
      // Skipped only where the model fails at that length on a plain input too: a failure on
      // some inputs only (a NaN in one probe pass) is the model's error, not the length's.
      Prober confirm(target, opt);
      PrecisionSwitch own_only(target, confirm, e.len());
      if (confirm.try_forward(own_only.in_own(), e.len()).empty()) throw;
      skipped.push_back({e.len(), e.reason()});
      lens.erase(it);
    }
  }
}

}  // namespace

AuditResult run_causality_audit(AuditTarget& target, const AuditOptions& opt) {
  return audit_schedule(target, opt, /*structural_pass=*/false);
}

AuditResult run_structural_audit(AuditTarget& target, const AuditOptions& opt) {
  return audit_schedule(target, opt, /*structural_pass=*/true);
}

void run_model_checks(AuditTarget& target, const AuditOptions& opt, const std::optional<std::string>& output,
                      AuditResult& r) {
  const ExactCudaMath exact_math;
  for (const auto& check : registered_checks()) {
    if (check->stage() != Check::Stage::kWholeModel || !check->wanted_for_model(opt)) continue;
    struct Metered {  // the check's seconds and forwards, however it ends
      AuditResult& r;
      CostMeter meter;
      ~Metered() { take_costs(meter, r); }
    } metered{r, {}};
    const CostScope scope(metered.meter);
    const CostSection section(check->name());
    check->run_model(target, opt, output, r);
    }
}

namespace {
template <class T>
T& entry(std::vector<std::pair<std::string, T>>& list, const std::string& name) {
  for (auto& [n, v] : list)
    if (n == name) return v;
  list.emplace_back(name, T{});
  return list.back().second;
}
}  // namespace

void take_costs(const CostMeter& meter, AuditResult& r) {
  for (const auto& s : meter.sections()) {
    entry(r.seconds_by_check, s.name) += s.seconds;
    entry(r.forwards_by_check, s.name) += s.forwards;
  }
  r.forwards += meter.total();
}

void add_costs(AuditResult& into, const AuditResult& from) {
  for (const auto& [name, s] : from.seconds_by_check) entry(into.seconds_by_check, name) += s;
  for (const auto& [name, f] : from.forwards_by_check) entry(into.forwards_by_check, name) += f;
  into.forwards += from.forwards;
}

nlohmann::json to_json(const PropertyCounterexample& c) {
  return {{"kind", violation_kind_name(c.kind)},   {"seq_len", c.seq_len},     {"cut", c.cut},       {"batch", c.batch},
          {"perturbation", c.perturbation}, {"mode", c.mode}, {"seed", c.seed}, {"positions", c.positions},
          {"effect", c.effect}, {"precision", c.precision}, {"cases", c.cases}};
}

namespace {
// The fields that are measured magnitudes: the same bits at the same thread count, possibly not
// in the last bits at another (a GEMM rounds a row differently at another place in another
// thread split). Everything else -- verdicts, horizons, violations, the precision that decided,
// whether a floor was measured -- is decided the same way whatever the threads
// (src/audit/README.md, "Across thread counts and machines"). The driver's own fields and every
// check's (Check::thread_dependent), in name order.
std::vector<std::string> thread_dependent_fields() {
  std::vector<std::string> fields = {"threshold", "precision_floor.value", "precision_floor.threshold",
                                     "precision_floor.horizon_threshold", "violations[].evidence.effect"};
  for (const auto& check : registered_checks())
    for (auto& f : check->thread_dependent()) fields.push_back(std::move(f));
  std::sort(fields.begin(), fields.end());
  return fields;
}

// Whether the check that reports violations of kind k says they carry a horizon.
bool carries_horizon(ViolationKind k) {
  for (const auto& check : registered_checks())
    if (check->carries_horizon(k)) return true;
  return false;
}

// One plain forward of the audited batch, in tokens (0: unknown).
double unit_tokens(const AuditResult& r) { return static_cast<double>(r.unit_rows * r.unit_len); }

nlohmann::json ledger_json(const ForwardLedger& f, double unit) {
  const ForwardCount all = f.total();
  nlohmann::json by_dtype = nlohmann::json::object();
  for (const auto& [dtype, n] : f.by_dtype) by_dtype[dtype] = {{"passes", n.passes}, {"tokens", n.tokens}};
  return {{"passes", all.passes},
          {"tokens", all.tokens},
          {"forward_equivalents", unit > 0 ? nlohmann::json(all.tokens / unit) : nlohmann::json(nullptr)},
          {"by_dtype", by_dtype},
          {"conversions", f.conversions}};
}

// What the audit ran: in all and by check, in forward-equivalents of the unit.
nlohmann::json forwards_json(const AuditResult& r) {
  const double unit = unit_tokens(r);
  nlohmann::json j = ledger_json(r.forwards, unit);
  j["unit"] = {{"rows", r.unit_rows}, {"seq_len", r.unit_len}, {"tokens", r.unit_rows * r.unit_len}};
  nlohmann::json by_check = nlohmann::json::object();
  for (const auto& [name, f] : r.forwards_by_check) by_check[name] = ledger_json(f, unit);
  j["by_check"] = by_check;
  return j;
}
}  // namespace

// The summary's cost line: forwards in all and by check (seconds stay in the JSON: a summary
// is compared across runs).
static std::string cost_line(const AuditResult& r) {
  const ForwardCount all = r.forwards.total();
  const double unit = unit_tokens(r);
  if (all.passes == 0 || unit <= 0) return "";
  std::string dtypes;
  for (const auto& [dtype, n] : r.forwards.by_dtype)
    dtypes += fmt::format("{}{} {}", dtypes.empty() ? "" : ", ", dtype, n.passes);
  std::string by;
  for (const auto& [name, f] : r.forwards_by_check)
    if (f.total().passes > 0) by += fmt::format("{}{} {:.1f}", by.empty() ? "" : ", ", name, f.total().tokens / unit);
  return fmt::format("  cost: {:.1f} forward-equivalents of [{}, {}] ({} passes: {}; {} dtype conversion{}){}{}\n",
                     all.tokens / unit, r.unit_rows, r.unit_len, all.passes, dtypes, r.forwards.conversions,
                     r.forwards.conversions == 1 ? "" : "s", by.empty() ? "" : ": ", by);
}

nlohmann::json to_json(const AuditResult& r) {
  // The audit's own fields; each check writes its own below.
  nlohmann::json j;
  j["verdict"] = verdict_name(r.verdict());
  j["modes"] = r.modes;
  j["seq_lens"] = r.seq_lens;
  j["stopped_early"] = r.stopped_early;
  j["seq_lens_planned"] = r.seq_lens_planned;
  j["lengths_probed"] = {{"lengths", r.seq_lens},
                         {"why", r.lengths_why.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.lengths_why)}};
  if (!r.lengths_skipped.empty()) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& k : r.lengths_skipped) skipped.push_back({{"length", k.length}, {"reason", k.reason}});
    j["lengths_skipped"] = skipped;
  }
  j["modes_planned"] = r.modes_planned;
  j["probes"] = r.probes;
  j["seconds"] = r.seconds;
  j["precision"] = r.precision;
  j["threshold"] = r.threshold();
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
  j["target"] = r.target;
  if (!r.format.empty()) j["format"] = r.format;
  j["device"] = r.device;
  j["weights_sha256"] = r.weights_sha256;
  j["notes"] = r.notes;
  j["contract"] = {{"lookahead", r.lookahead}, {"window", opt_json(r.window)}};
  j["contract_holds"] = r.violations.empty();
  nlohmann::json sec = nlohmann::json::object();
  for (const auto& [name, t] : r.seconds_by_check) sec[name] = t;
  j["seconds_by_check"] = sec;
  j["forwards"] = forwards_json(r);
  j["threads"] = at::get_num_threads();
  j["thread_dependent"] = thread_dependent_fields();
  nlohmann::json violations = nlohmann::json::array();
  for (const auto& v : r.violations) {
    nlohmann::json vj{{"kind", violation_kind_name(v.kind)}, {"evidence", evidence_json(v.evidence)}};
    if (carries_horizon(v.kind)) {
      vj["horizon"] = v.horizon;
      vj["allowed"] = v.allowed;
    }
    violations.push_back(vj);
  }
  j["violations"] = violations;
  for (const auto& check : registered_checks()) check->write_json(r, j);
  // Every output leaf; one entry (the output itself, from r) for a one-output target.
  const auto leaf_json = [](const std::string& path, const std::vector<int64_t>& shape, const std::string& skipped,
                            const AuditResult* a) {
    nlohmann::json oj{{"path", path}};
    if (!shape.empty()) oj["shape"] = shape;  // unknown for built-in targets
    if (!a) {
      oj["skipped"] = skipped;
      return oj;
    }
    oj["verdict"] = verdict_name(a->verdict());
    oj["precision"] = a->precision;
    nlohmann::json kinds = nlohmann::json::array();
    for (const auto& v : a->violations) kinds.push_back(violation_kind_name(v.kind));
    oj["violations"] = kinds;
    for (const auto& check : registered_checks()) check->write_output_json(*a, oj);
    return oj;
  };
  nlohmann::json outs = nlohmann::json::array();
  if (r.outputs.empty()) outs.push_back(leaf_json("", r.output_shape, "", &r));
  for (const auto& o : r.outputs) outs.push_back(leaf_json(o.path, o.shape, o.skipped, o.audited.get()));
  j["outputs"] = outs;
  if (!r.outputs.empty()) j["worst_output"] = r.worst_output;
  return j;
}

OutputResult output_result(const AuditResult& r, const std::string& path, const std::vector<int64_t>& shape) {
  OutputResult o;
  o.path = path;
  o.shape = shape;
  o.audited = std::make_shared<const AuditResult>(r);
  return o;
}

std::vector<std::vector<double>> AuditResult::leak_map() const {
  std::vector<std::vector<double>> map(static_cast<size_t>(map_seq_len));
  for (int64_t t = 0; t < map_seq_len; ++t) map[static_cast<size_t>(t)].assign(static_cast<size_t>(map_seq_len - 1 - t), 0.0);
  for (const auto& [mode, m] : leak_maps_by_mode)
    for (size_t t = 0; t < m.size() && t < map.size(); ++t)
      for (size_t k = 0; k < m[t].size() && k < map[t].size(); ++k) map[t][k] = std::max(map[t][k], m[t][k]);
  return map;
}

std::string leak_map_csv(const AuditResult& r) {
  std::string out = "t,D,effect\n";
  const auto map = r.leak_map();
  for (size_t t = 0; t < map.size(); ++t)
    for (size_t k = 0; k < map[t].size(); ++k)
      if (map[t][k] > 0) out += fmt::format("{},{},{:.6g}\n", t, k + 1, map[t][k]);
  return out;
}

namespace {
// A violation the headline's lead does not state, named by the check that reports it.
std::string headline_name(const Violation& v, const AuditResult& r) {
  for (const auto& check : registered_checks())
    if (std::string name = check->headline(v, r); !name.empty()) return name;
  return std::string(violation_kind_name(v.kind)) + " VIOLATED";
}

bool stated_in_lead(ViolationKind k) {
  for (const auto& check : registered_checks())
    if (check->states_in_lead(k)) return true;
  return false;
}

// The first non-empty answer of the registered checks to `part`.
template <class Part>
std::string first_part(Part part) {
  for (const auto& check : registered_checks())
    if (std::string s = part(*check); !s.empty()) return s;
  return "";
}
}  // namespace

std::string kind_list(const std::vector<ViolationKind>& kinds) {
  std::vector<std::string> names;
  for (ViolationKind k : kinds) names.emplace_back(violation_kind_name(k));
  return fmt::format("{}", fmt::join(names, ","));
}

std::string summarize(const AuditResult& r) {
  // The headline: the audit's own verdict as the check that owns it states it (its lead), then
  // every other violation by its own name, so a model whose only fault is its cache does not
  // read as a future leak of horizon 0.
  std::string others;
  for (const auto& v : r.violations)
    if (!stated_in_lead(v.kind)) others += "; " + headline_name(v, r);
  const std::string lead = first_part([&](const Check& c) { return c.headline_lead(r); });
  std::string s = fmt::format("{}: {}, {} probes, {} precision, {:.2f} s{}){}\n", r.target, lead, r.probes,
                              r.precision, r.seconds, r.device == "cpu" ? "" : ", on " + r.device, others);
  for (const auto& check : registered_checks()) s += check->lead_lines(r);
  s += fmt::format("  contract: lookahead {}, window {}: {}\n", r.lookahead, r.window ? std::to_string(*r.window) : "none",
                   r.violations.empty() ? "holds" : "VIOLATED");
  for (const auto& v : r.violations) s += fmt::format("  violation [{}]: {}\n", violation_kind_name(v.kind), v.evidence.text);
  std::vector<std::string> status;  // every check's part of one line
  for (const auto& check : registered_checks())
    if (std::string part = check->status(r); !part.empty()) status.push_back(std::move(part));
  if (!status.empty()) s += fmt::format("  {}\n", fmt::join(status, "; "));
  if (!r.lengths_why.empty()) s += fmt::format("  lengths probed: {}: {}\n", fmt::join(r.seq_lens, ", "), r.lengths_why);
  if (!r.lengths_skipped.empty()) {
    s += fmt::format("  lengths probed: {}; skipped where the model does not run:\n", fmt::join(r.seq_lens, ", "));
    for (const auto& k : r.lengths_skipped) s += fmt::format("    L {}: {}\n", k.length, k.reason);
  }
  for (const auto& check : registered_checks()) s += check->summary(r);
  s += cost_line(r);
  for (const auto& n : r.notes) s += "  note: " + n + "\n";
  if (!r.outputs.empty()) {
    s += fmt::format("  outputs ({}; the lines above are the worst, {}):\n", r.outputs.size(),
                     r.worst_output.empty() ? "the output itself" : r.worst_output);
    for (const auto& o : r.outputs) {
      const std::string name = o.path.empty() ? "(output)" : o.path;
      if (!o.audited) {
        s += fmt::format("    {:<24} skipped: {}\n", name, o.skipped);
        continue;
      }
      const AuditResult& a = *o.audited;
      std::vector<ViolationKind> kinds;
      for (const auto& v : a.violations) kinds.push_back(v.kind);
      const std::string facts = first_part([&](const Check& c) { return c.output_facts(a); });
      s += fmt::format("    {:<24} {} ({}, {}{})\n", name, a.verdict() == Verdict::kLeaky ? "LEAKY" : "causal", facts,
                       a.precision, kinds.empty() ? "" : fmt::format(", violated: {}", kind_list(kinds)));
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
