// --property N (audit/property_search.h): RapidCheck draws N cases and checks every property of
// the contract on each; a failing case is shrunk to a minimal counterexample.
#include "audit/audit_target.h"
#include "audit/checks/check.h"
#include "audit/checks/json_fields.h"
#include "audit/model_file_target.h"
#include "audit/output_audit.h"
#include "audit/property_search.h"
#include "util/error.h"

namespace grassaudit {
namespace {

class PropertyCheck : public Check {
 public:
  const char* name() const override { return "property"; }
  Stage stage() const override { return Stage::kWholeModel; }
  bool wanted_for_model(const AuditOptions& opt) const override { return opt.property_cases.has_value(); }
  void run_model(AuditTarget& target, const AuditOptions& opt, const std::optional<std::string>&,
                 AuditResult& r) override {
    AuditOptions o = opt;  // a file's fixed length holds for the search too
    if (auto* file = dynamic_cast<ModelFileTarget*>(&target)) o = file_audit_options(*file, opt);
    run_property_search(target, o, *opt.property_cases, r);
  }
  void write_json(const AuditResult& r, nlohmann::json& j) const override {
    j["counterexample"] = r.counterexample ? to_json(*r.counterexample) : nlohmann::json(nullptr);
  }
  std::vector<std::string> thread_dependent() const override { return {"counterexample.effect"}; }
};

}  // namespace

std::unique_ptr<Check> make_property_check() { return std::make_unique<PropertyCheck>(); }

}  // namespace grassaudit
