#pragma once
// Internal to src/audit: the seam every audit check plugs into.
//
// A check decides one property of the contract (the future tables, batch and length
// independence, the past horizon, the gradient's second opinion, the structural pass, the
// incremental path, the property search). It declares its name (the key of its timing, the
// source of its probe seeds: probe_seed in audit_prober.h), when it runs, how it probes and decides (through
// decide_screened: the float32 screen, the float64 decision), the violation its findings
// imply and whether that violation carries a horizon, its fields of the JSON (the whole
// result's and each output's) and which of them depend on the thread count, its lines of the
// summary, its name in the headline, whether it runs again inside the structural pass, and the
// expectations an audit suite may state about it. What it hands the checks after it is a
// declared output (CheckOutputs, the types in checks/check_outputs.h). The driver
// (run_causality_audit, run_model_checks) owns the order, the timing, the verdict and the
// assembly of the JSON, the summary and the suite's comparisons, and names no check: adding a
// check is its own file, one line in checks/registry.cpp, and a control (checks/README.md).
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/audit_options.h"
#include "audit/audit_result.h"
#include "util/non_copyable.h"

namespace grassaudit {

class Prober;
class PrecisionSwitch;

// What the checks of one run hand the checks after them, one value per type: a check puts the
// outputs it declares (checks/check_outputs.h says which check puts which), and a later one
// reads them (nullptr before they are put, or when the check that puts one did not run).
class CheckOutputs {
 public:
  template <class T>
  void put(T value) {
    values_[std::type_index(typeid(T))] = std::make_shared<T>(std::move(value));
  }
  template <class T>
  const T* get() const {
    const auto it = values_.find(std::type_index(typeid(T)));
    return it == values_.end() ? nullptr : static_cast<const T*>(it->second.get());
  }

 private:
  std::map<std::type_index, std::shared_ptr<void>> values_;
};

// What the checks of one audit share while it runs: the target, the options, the probes, the
// schedule, the result being filled, and the declared outputs of the checks that ran before.
struct AuditRun {
  AuditTarget& target;
  const AuditOptions& opt;
  Prober& prober;
  PrecisionSwitch& prec;
  int64_t L;                       // the main length
  std::vector<int64_t> lens;       // the schedule
  std::vector<AuditMode> modes;    // the modes audited
  std::vector<AuditMode> probed;   // those probed: train mode proven equal to eval mode is not
  AuditResult& r;
  CheckOutputs outputs;
  // The gate's stop_when_leaky proved a leak: the checks after it could only add to it.
  bool settled() const;
};

// One field of an audit suite's "expect" object: what the result says for it (JSON null: the
// property was not checked), compared with the expectation by equality.
struct Expectation {
  const char* key;
  std::function<nlohmann::json(const AuditResult&)> got;
  // A fact about the float32 kernels of the PyTorch that made the suite rather than about the
  // model: compared only on that PyTorch's major.minor (the suite's "producer").
  bool kernel_dependent = false;
};

class Check {
 public:
  // kPerOutput checks run inside run_causality_audit, once per audited output leaf; kAfterVerdict
  // checks run there after the verdict, only when it is leaky, to explain it (they add no
  // violation); kWholeModel checks (the property search, the incremental path) run once per model
  // afterwards (run_model_checks), each adding its own violation to the finished result.
  enum class Stage { kPerOutput, kAfterVerdict, kWholeModel };

  virtual ~Check() = default;
  virtual const char* name() const = 0;
  virtual Stage stage() const { return Stage::kPerOutput; }

  // kPerOutput: whether it runs, from the options and what the checks before it found.
  virtual bool wanted(const AuditRun& run) const { return false; }
  // Probe, decide, and record the findings in run.r. Every probe runs inside a precision scope
  // the switch hands out (run.prec: in_own, in_deciding, in_decided; decide_screened decides).

  virtual void run(AuditRun& run) {}
  // The violations its findings imply under the contract (run.r.lookahead, run.r.window).
  virtual void judge(const AuditRun& run, std::vector<Violation>& out) const {}

  // kWholeModel: whether it runs, and the run (`output`: the leaf --output named, if any).
  virtual bool wanted_for_model(const AuditOptions& opt) const { return false; }
  virtual void run_model(AuditTarget& target, const AuditOptions& opt, const std::optional<std::string>& output,
                         AuditResult& r) {}

  // Whether it runs again inside the structural pass (the audit with exactly-zero parameters
  // redrawn): the checks whose findings the pass's future verdict rests on.
  virtual bool in_structural_pass() const { return false; }
  // Whether a violation of kind k it reports carries a horizon and what the contract allows
  // (the JSON's violations[].horizon and .allowed).
  virtual bool carries_horizon(ViolationKind k) const { return false; }

  // Its fields of the JSON (written whether it ran or not: null then).
  virtual void write_json(const AuditResult& r, nlohmann::json& j) const {}
  // Its fields of each audited output's entry (outputs[]), from that output's own result.
  virtual void write_output_json(const AuditResult& r, nlohmann::json& j) const {}
  // The paths of its JSON fields that are measured magnitudes ("max_effect", "length_profile",
  // "gradient_check.max_future_grad"): the same bits at the same thread count, possibly not in
  // the last bits at another (src/audit/README.md, "Across thread counts and machines").
  virtual std::vector<std::string> thread_dependent() const { return {}; }
  // Its part of the summary's one status line ("length-dependent: no"), "" for none.
  virtual std::string status(const AuditResult& r) const { return ""; }
  // Its lines of the text summary, after the contract's (each ending in a newline; "" for none).
  virtual std::string summary(const AuditResult& r) const { return ""; }
  // The headline's name for a violation it reported ("" when the kind is not its own).
  virtual std::string headline(const Violation& v, const AuditResult& r) const { return ""; }
  // The check whose violation is the audit's own verdict (the future leak) leads the headline,
  // "LEAKY (leak horizon 3, max effect 0.25" (the driver closes it with the probes, precision and
  // seconds), states its own kinds there rather than by name, adds its lines right under the
  // headline, and gives each audited output's facts in the summary ("leak horizon 3, max effect
  // 0.25"). "" / false: not this check.
  virtual std::string headline_lead(const AuditResult& r) const { return ""; }
  virtual bool states_in_lead(ViolationKind k) const { return false; }
  virtual std::string lead_lines(const AuditResult& r) const { return ""; }
  virtual std::string output_facts(const AuditResult& r) const { return ""; }
  // The suite's "expect" fields it answers.
  virtual std::vector<Expectation> expectations() const { return {}; }
};

// Every check, in the order the driver runs them.
const std::vector<std::unique_ptr<Check>>& registered_checks();

// A check added to the registry (after the others) while it lives: a test's own check.
class ScopedCheck : NonCopyable {
 public:
  explicit ScopedCheck(std::unique_ptr<Check> check);
  ~ScopedCheck();

 private:
  const Check* check_;
};

// The future audit again for the structural pass, with only the checks that run inside it.
AuditResult run_structural_audit(AuditTarget& target, const AuditOptions& opt);

// Why a check failed, in one line: LibTorch's own text without its backtrace.
std::string failure_line(const std::exception& e);

}  // namespace grassaudit
