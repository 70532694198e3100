// The precision an audit runs in, as a type (audit/precision_switch.h): probes run only inside
// the scope they name, tables say the precision they were measured in, scopes give the model
// back to the scope around them, and thresholds exist only once the deciding precision is set.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>

#include "audit/audit_prober.h"
#include "audit/precision_switch.h"
#include "function_target.h"

namespace grassaudit {
namespace {

using grassaudit::testing::FunctionTarget;

// y_t = x_t + x_{t+1} (reads one step ahead): every table moves.
FunctionTarget one_ahead(bool allow_double = true) {
  return FunctionTarget(
      "one ahead", 2,
      [](const at::Tensor& x, bool) {
        const int64_t L = x.size(1);
        return x + at::cat({x.narrow(1, 1, L - 1), at::zeros_like(x.narrow(1, 0, 1))}, 1);
      },
      allow_double);
}

// The target, its prober and its switch at L = 8, as every test here needs them.
struct Switched {
  explicit Switched(bool allow_double = true) : t(one_ahead(allow_double)), prober(t, o), prec(t, prober, 8) {}
  std::tuple<FunctionTarget&, Prober&, PrecisionSwitch&> parts() { return {t, prober, prec}; }
  FunctionTarget t;
  AuditOptions o = grassaudit::testing::audit_options(8, 2);
  Prober prober;
  PrecisionSwitch prec;
};

TEST(PrecisionScope, AProbeRunsOnlyInTheScopeItNames) {
  Switched s;
  auto [t, prober, prec] = s.parts();  // references into s
  const InPrecision own = prec.in_own();
  Pass pass;
  EXPECT_NO_THROW(prober.probe_table(own, AuditMode::kEval, 8, pass));
  {
    const InPrecision f64 = prec.in_deciding();
    ASSERT_TRUE(f64.float64());
    EXPECT_EQ(t.dtype(), at::kDouble);
    EXPECT_THROW(prober.probe_table(own, AuditMode::kEval, 8, pass), std::logic_error);  // a float32 token
    EXPECT_NO_THROW(prober.probe_table(f64, AuditMode::kEval, 8, pass));
  }
  EXPECT_EQ(t.dtype(), at::kFloat);  // back in the scope around it
}

TEST(PrecisionScope, EachTableSaysItsPrecisionAndThePassIsReadFromThem) {
  Switched s;
  auto [t, prober, prec] = s.parts();  // references into s
  Pass pass;
  {
    const InPrecision own = prec.in_own();
    pass.tables[{AuditMode::kEval, 8}] = prober.probe_table(own, AuditMode::kEval, 8, pass);
  }
  EXPECT_EQ(pass.tables.at({AuditMode::kEval, 8}).dtype, at::kFloat);
  EXPECT_EQ(pass.dtype(), at::kFloat);
  {
    const InPrecision f64 = prec.in_deciding();
    pass.tables[{AuditMode::kEval, 4}] = prober.probe_table(f64, AuditMode::kEval, 4, pass);
  }
  EXPECT_EQ(pass.tables.at({AuditMode::kEval, 4}).dtype, at::kDouble);
  EXPECT_EQ(pass.dtype(), at::kDouble);  // any table decided in float64
  EXPECT_EQ(Pass{}.dtype(), at::ScalarType::Undefined);
}

TEST(PrecisionScope, WithNoScopeAroundTheModelStaysUntilAsked) {
  Switched s;
  auto [t, prober, prec] = s.parts();  // references into s
  { const InPrecision f64 = prec.in_deciding(); }
  EXPECT_EQ(t.dtype(), at::kDouble);  // no conversion back until a scope asks for one
  { const InPrecision again = prec.in_deciding(); }
  EXPECT_EQ(t.dtype(), at::kDouble);
  prec.restore_own();
  EXPECT_EQ(t.dtype(), at::kFloat);
  {
    const InPrecision own = prec.in_own();
    EXPECT_THROW(prec.restore_own(), std::logic_error);  // not from inside a scope
  }
}

TEST(PrecisionScope, ThresholdsExistOnlyOnceTheDecidingPrecisionIsEstablished) {
  Switched s;
  auto [t, prober, prec] = s.parts();  // references into s
  EXPECT_FALSE(prec.established());
  EXPECT_THROW(prec.threshold(), std::logic_error);
  EXPECT_THROW(prec.horizon_threshold(), std::logic_error);
  prec.establish();
  EXPECT_TRUE(prec.established());
  ASSERT_TRUE(prec.floor().has_value());
  EXPECT_EQ(prec.floor()->precision, "float64");
  EXPECT_GT(prec.threshold(), 0.0);
  EXPECT_FALSE(prec.unavailable());
}

TEST(PrecisionScope, WhereFloat64IsRefusedTheOwnDtypeDecides) {
  Switched s(/*allow_double=*/false);
  auto [t, prober, prec] = s.parts();  // references into s
  const InPrecision in = prec.in_deciding();
  EXPECT_FALSE(in.float64());
  EXPECT_EQ(in.dtype(), at::kFloat);
  EXPECT_TRUE(prec.unavailable());
  ASSERT_TRUE(prec.floor().has_value());
  EXPECT_EQ(prec.floor()->precision, "float32");
  EXPECT_GE(prec.threshold(), kLeakFloor32);
}

TEST(PrecisionScope, TheSwitchGivesTheModelBackHoweverTheAuditEnds) {
  FunctionTarget t = one_ahead();
  const AuditOptions o = grassaudit::testing::audit_options(8, 2);
  Prober prober(t, o);
  {
    PrecisionSwitch prec(t, prober, 8);
    const InPrecision f64 = prec.in_deciding();
    EXPECT_EQ(t.dtype(), at::kDouble);
  }
  EXPECT_EQ(t.dtype(), at::kFloat);
}

}  // namespace
}  // namespace grassaudit
