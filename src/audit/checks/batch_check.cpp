// Batch independence (causality_audit.h): in each probed mode at the main length, rows of a pass
// are replaced while others are kept; a kept row that moves means rows mix (train-mode
// BatchNorm, a mean over the batch). A coupled mode is then probed one row per pass, so that
// batch mixing is named as such and never read as a future leak: this check runs first.
#include <fmt/format.h>

#include <algorithm>

#include "audit/checks/check.h"
#include "audit/checks/check_outputs.h"
#include "audit/checks/decide.h"
#include "audit/checks/json_fields.h"

namespace grassaudit {
namespace {

class BatchCheck : public Check {
 public:
  const char* name() const override { return "batch"; }
  bool wanted(const AuditRun& run) const override { return run.opt.batch_check; }
  // The structural pass's tables are probed one row per pass in a coupled mode too.
  bool in_structural_pass() const override { return true; }

  void run(AuditRun& run) override {
    CoupledModes coupled = measure(run);
    // A mode not probed (train mode proven equal to eval mode) shares eval mode's coupling.
    const bool eval_coupled = std::find(coupled.modes.begin(), coupled.modes.end(), AuditMode::kEval) != coupled.modes.end();
    for (AuditMode mode : run.modes)
      if (eval_coupled && std::find(run.probed.begin(), run.probed.end(), mode) == run.probed.end())
        coupled.modes.push_back(mode);
    run.outputs.put(std::move(coupled));
  }

  void judge(const AuditRun& run, std::vector<Violation>& out) const override {
    if (run.r.batch_coupled.value_or(false)) out.push_back({ViolationKind::kBatch, 0, 0, run.r.batch_evidence});
  }

  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["batch_coupled"] = opt_json(r.batch_coupled);
    j["batch_evidence"] = evidence_json(r.batch_evidence);
    j["batch_profile"] = r.batch_profile.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.batch_profile);
  }
  void write_output_json(const AuditResult& r, nlohmann::json& j) const override {
    j["batch_coupled"] = opt_json(r.batch_coupled);
  }
  std::vector<std::string> thread_dependent() const override { return {"batch_evidence.effect", "batch_profile"}; }
  std::string status(const AuditResult& r) const override {
    return std::string("batch-coupled: ") + (r.batch_coupled ? (*r.batch_coupled ? "yes" : "no") : "not checked");
  }

  std::string headline(const Violation& v, const AuditResult&) const override {
    if (v.kind != ViolationKind::kBatch) return "";
    return fmt::format("BATCH-COUPLED (rows of a batch mix, {} mode)", v.evidence.mode);
  }

  std::vector<Expectation> expectations() const override {
    return {{"batch_coupled", [](const AuditResult& r) { return opt_json(r.batch_coupled); }}};
  }

 private:
  // Sets r.batch_coupled / r.batch_evidence (nullopt when the model does not run at the batch
  // size); returns the modes whose rows mix.
  static CoupledModes measure(AuditRun& run) {
    CoupledModes coupled;
    AuditResult& r = run.r;
    const int64_t L = run.L;
    r.batch_coupled = false;
    for (AuditMode mode : run.probed) {
      BatchEffect e;
      try {
        const InPrecision own = run.prec.in_own();
        e = run.prober.batch_effect(own, mode, L, screen_wanted(run.opt));
      } catch (const NonFiniteOutput&) {
        throw;  // it ran at this batch size, and broke the output contract
      } catch (const InputError& err) {  // e.g. a model traced at batch 1
        r.batch_coupled.reset();
        r.notes.push_back(fmt::format(
            "batch check skipped: the model does not run at the check's batch size ({})", err.what()));
        return coupled;
      }
      const auto d = decide_screened<BatchEffect>(run.prec, e, e.effect > 0, ThresholdKind::kComparison,
                                                  [&](const InPrecision& in) {
                                                    return run.prober.batch_effect(in, mode, L, screen_wanted(run.opt));
                                                  });
      if (!(d.value.effect > d.threshold)) continue;
      coupled.modes.push_back(mode);
      if (*r.batch_coupled) continue;  // evidence from the first coupled mode
      r.batch_coupled = true;
      r.batch_profile = d.value.by_position;
      Evidence& ev = r.batch_evidence;
      ev.mode = mode_name(mode);
      ev.seq_len = L;
      ev.row = d.value.row;
      ev.position = d.value.position;
      ev.effect = d.value.effect;
      ev.precision = decided_in(run.prec, d.float64);
      ev.text = fmt::format(
          "row {} moved by {:.3g} (relative) at position {} when the other rows of its batch were replaced ({} mode, "
          "L={}, {}): rows of a batch mix",
          d.value.row, d.value.effect, d.value.position, ev.mode, L, ev.precision);
    }
    if (*r.batch_coupled)
      r.notes.push_back("batch-coupled: " + r.batch_evidence.text +
                        "; horizons of the coupled modes were measured one row per pass");
    return coupled;
  }
};

}  // namespace

std::unique_ptr<Check> make_batch_check() { return std::make_unique<BatchCheck>(); }

}  // namespace grassaudit
