// A check is one file plus one line in the registry, and owns its facts: a toy check added to the
// registry here, with no other edit, has its JSON field (whole result and each output), its part
// of the summary's status line, its summary line, its thread-dependent field, and its place in
// the structural pass.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>

#include <nlohmann/json.hpp>

#include "audit/causality_audit.h"
#include "audit/checks/check.h"
#include "function_target.h"

namespace grassaudit {
namespace {

// Counts its runs; says so in its own fields and lines.
class ToyCheck : public Check {
 public:
  ToyCheck(bool in_structural, int* runs) : in_structural_(in_structural), runs_(runs) {}
  const char* name() const override { return "toy"; }
  bool wanted(const AuditRun&) const override { return true; }
  bool in_structural_pass() const override { return in_structural_; }
  void run(AuditRun& run) override { ++*runs_; }
  void write_json(const AuditResult& r, nlohmann::json& j) const override { j["toy_runs"] = *runs_; }
  void write_output_json(const AuditResult& r, nlohmann::json& j) const override { j["toy_seen"] = true; }
  std::vector<std::string> thread_dependent() const override { return {"toy_runs"}; }
  std::string status(const AuditResult&) const override { return "toy: ok"; }
  std::string summary(const AuditResult&) const override { return "  toy check: ran\n"; }

 private:
  bool in_structural_;
  int* runs_;
};

// y = x + w * x_{t+1}, with w a parameter that is exactly zero as given: causal at these
// weights, and the structural pass (w redrawn) runs, so the checks inside it run twice.
class ZeroGateTarget : public testing::FunctionTarget {
 public:
  ZeroGateTarget()
      : FunctionTarget("zero gate", 2, [this](const at::Tensor& x, bool) {
          const at::Tensor next = at::cat({x.narrow(1, 1, x.size(1) - 1), at::zeros_like(x.narrow(1, 0, 1))}, 1);
          return x + w_ * next;
        }) {}
  bool supports_structural_pass() const override { return true; }
  std::vector<RedrawnTensor> redraw_zero_parameters(uint64_t) override {
    if (w_ != 0.0) return {};
    w_ = 0.5;
    RedrawnTensor t;
    t.name = "w";
    t.shape = {1};
    t.scale = 0.5;
    return {t};
  }
  void restore_redrawn_parameters() override { w_ = 0.0; }

 private:
  double w_ = 0.0;
};

TEST(ToyCheck, ItsFieldsLinesAndStructuralPlaceAppearWithNoOtherEdit) {
  for (bool in_structural : {false, true}) {
    SCOPED_TRACE(in_structural ? "inside the structural pass" : "outside the structural pass");
    int runs = 0;
    ZeroGateTarget target;
    AuditOptions o = testing::audit_options(8, 1);
    o.gradient_check = false;
    AuditResult r;
    {
      const ScopedCheck toy(std::make_unique<ToyCheck>(in_structural, &runs));
      r = run_causality_audit(target, o);
      const nlohmann::json j = to_json(r);
      EXPECT_EQ(j.at("toy_runs"), runs);
      EXPECT_EQ(j.at("outputs").at(0).at("toy_seen"), true);
      const auto& td = j.at("thread_dependent");
      EXPECT_NE(std::find(td.begin(), td.end(), "toy_runs"), td.end());
      const std::string s = summarize(r);
      EXPECT_NE(s.find("; toy: ok\n"), std::string::npos) << s;
      EXPECT_NE(s.find("  toy check: ran\n"), std::string::npos) << s;
    }
    ASSERT_TRUE(r.structural && r.structural->ran) << (r.structural ? r.structural->skipped : "no pass");
    EXPECT_EQ(r.structural->leak_horizon, 1);  // the redrawn gate reads x_{t+1}
    EXPECT_EQ(runs, in_structural ? 2 : 1);
    // Gone with its scope: the registry is the built-in one again.
    const nlohmann::json after = to_json(r);
    EXPECT_FALSE(after.contains("toy_runs"));
    EXPECT_EQ(summarize(r).find("toy"), std::string::npos);
  }
}

}  // namespace
}  // namespace grassaudit
