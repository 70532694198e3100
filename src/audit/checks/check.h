#pragma once
// Internal to src/audit: the seam every audit check plugs into.
//
// A check decides one property of the contract (the future tables, batch and length
// independence, the past horizon, the gradient's second opinion, the structural pass, the
// incremental path, the property search). It declares its name (the key of its timing, the
// source of its probe seeds: probe_seed in audit_prober.h), when it runs, how it probes and decides (through
// decide_screened: the float32 screen, the float64 decision), the violation its findings
// imply, its fields of the JSON, its line of the summary's headline, and the expectations an
// audit suite may state about it. The driver (run_causality_audit, run_model_checks) owns the
// order, the timing, the verdict and the assembly of the JSON, the summary and the suite's
// comparisons: adding a check is its own file, one line in checks/registry.cpp, and a control.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "audit/audit_options.h"
#include "audit/audit_result.h"

namespace grassaudit {

class Prober;
class PrecisionSwitch;
struct DecidedTables;

// What the checks of one audit share while it runs.
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
  // The future tables as decided (the future check's record): the length check's guard, the
  // gradient's comparison and the gate's early stop read them.
  std::shared_ptr<DecidedTables> tables;
  Evidence future_evidence, past_evidence;
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
  // kPerOutput checks run inside run_causality_audit, once per audited output leaf; kWholeModel
  // checks (the property search, the incremental path) run once per model afterwards
  // (run_model_checks), each adding its own violation to the finished result.
  enum class Stage { kPerOutput, kWholeModel };

  virtual ~Check() = default;
  virtual const char* name() const = 0;
  virtual Stage stage() const { return Stage::kPerOutput; }

  // kPerOutput: whether it runs, from the options and what the checks before it found.
  virtual bool wanted(const AuditRun& run) const { return false; }
  // Runs with the target in the precision that decided the future tables (the driver puts it
  // there); otherwise the check moves between precisions itself (decide_screened).
  virtual bool in_decisive_precision() const { return false; }
  // Probe, decide, and record the findings in run.r.
  virtual void run(AuditRun& run) {}
  // The violations its findings imply under the contract (run.r.lookahead, run.r.window).
  virtual void judge(const AuditRun& run, std::vector<Violation>& out) const {}

  // kWholeModel: whether it runs, and the run (`output`: the leaf --output named, if any).
  virtual bool wanted_for_model(const AuditOptions& opt) const { return false; }
  virtual void run_model(AuditTarget& target, const AuditOptions& opt, const std::optional<std::string>& output,
                         AuditResult& r) {}

  // Its fields of the JSON (written whether it ran or not: null then).
  virtual void write_json(const AuditResult& r, nlohmann::json& j) const {}
  // Its lines of the text summary, after the contract's (each ending in a newline; "" for none).
  virtual std::string summary(const AuditResult& r) const { return ""; }
  // The headline's name for a violation it reported ("" when the kind is not its own).
  virtual std::string headline(const Violation& v, const AuditResult& r) const { return ""; }
  // The suite's "expect" fields it answers.
  virtual std::vector<Expectation> expectations() const { return {}; }
};

// Every check, in the order the driver runs them.
const std::vector<std::unique_ptr<Check>>& registered_checks();

// Why a check failed, in one line: LibTorch's own text without its backtrace.
std::string failure_line(const std::exception& e);

}  // namespace grassaudit
