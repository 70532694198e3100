// --incremental (audit/incremental_audit.h): the model's init_state / step path against its
// forward, over many partitions of the sequence, and isolated from state kept elsewhere.
#include <fmt/format.h>

#include "audit/checks/check.h"
#include "audit/checks/json_fields.h"
#include "audit/incremental_audit.h"
#include "audit/model_file_target.h"

namespace grassaudit {
namespace {

class IncrementalCheck : public Check {
 public:
  const char* name() const override { return "incremental"; }
  Stage stage() const override { return Stage::kWholeModel; }
  bool wanted_for_model(const AuditOptions& opt) const override { return opt.incremental; }
  void run_model(AuditTarget& target, const AuditOptions& opt, const std::optional<std::string>& output,
                 AuditResult& r) override {
    // step returns one tensor: it is compared with forward's output, or the leaf --output names.
    if (auto* file = dynamic_cast<ModelFileTarget*>(&target)) file->select_output(output.value_or(""));
    IncrementalOptions o;
    o.seq_len = opt.seq_len;
    o.seed = opt.seed;
    attach_incremental(run_incremental_audit(target, o), r);
  }
  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["incremental"] = r.incremental ? to_json(*r.incremental) : nlohmann::json(nullptr);
  }
  std::vector<std::string> thread_dependent() const override {
    return {"incremental.effect", "incremental.effect_own_dtype", "incremental.threshold",
            "incremental.precision_floor.value", "incremental.first_inconsistent.effect",
            "incremental.isolation.fresh_state_effect", "incremental.isolation.forward_after_steps_effect"};
  }
  std::string headline(const Violation& v, const AuditResult& r) const override {
    if (v.kind != ViolationKind::kIncremental) return "";
    const Evidence& e = v.evidence;
    if (!r.incremental || !r.incremental->consistent)
      return fmt::format("incremental path INCONSISTENT (step() differs from forward() by {:.3g} at y_{})", e.effect,
                         e.position);
    return fmt::format("incremental path NOT ISOLATED (outputs moved by {:.3g}: state kept outside the passed state)",
                       e.effect);
  }
  std::vector<Expectation> expectations() const override {
    return {
        {"incremental_consistent",
         [](const AuditResult& r) { return r.incremental ? nlohmann::json(r.incremental->consistent) : nlohmann::json(nullptr); }},
        {"incremental_isolation",
         [](const AuditResult& r) { return r.incremental ? nlohmann::json(r.incremental->isolation) : nlohmann::json(nullptr); }},
    };
  }
};

}  // namespace

std::unique_ptr<Check> make_incremental_check() { return std::make_unique<IncrementalCheck>(); }

}  // namespace grassaudit
