// The audit on CUDA against the audit on the CPU (needs a GPU; skipped without one): every case of
// the controls and signature suites passes on CUDA as on the CPU, with the same verdict, the same
// horizons and the same leak map cells (which cells moved; the effect sizes are each device's own
// float32 and float64 arithmetic). Where no GPU is at hand the CPU half runs: a TorchScript file
// placed on the CPU (to_device asked, a no-op for the device it is on) audits exactly as without
// the call, and CUDA is refused with an InputError that leaves the target where it was.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <string>
#include <vector>

#include "audit/audit_suite.h"
#include "audit/audit_target.h"
#include "audit/causality_audit.h"
#include "audit/model_signature.h"
#include "formats/model_file.h"
#include "formats/torchscript/torchscript_target.h"
#include "util/error.h"

using namespace grassaudit;

namespace {
const std::string kDir = std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/";

// (t, D) of every non-zero cell of the leak map.
std::vector<std::pair<size_t, size_t>> moved_cells(const AuditResult& r) {
  std::vector<std::pair<size_t, size_t>> out;
  const auto map = r.leak_map();
  for (size_t t = 0; t < map.size(); ++t)
    for (size_t d = 0; d < map[t].size(); ++d)
      if (map[t][d] > 0) out.emplace_back(t, d);
  return out;
}
}  // namespace

TEST(AuditDevice, PlacedOnTheCpuAuditsAsWithoutIt) {
  AuditOptions o;
  o.seq_len = 12;
  o.trials = 1;
  TorchScriptTarget plain(kDir + "controls/bidirectional_attention.pt", {InputBinding::parse("tokens:64")});
  TorchScriptTarget placed(kDir + "controls/bidirectional_attention.pt", {InputBinding::parse("tokens:64")});
  place_on_device(placed, "cpu");
  const AuditResult a = run_causality_audit(plain, o), b = run_causality_audit(placed, o);
  EXPECT_EQ(b.device, "cpu");
  EXPECT_EQ(a.verdict(), b.verdict());
  EXPECT_EQ(a.leak_horizon, b.leak_horizon);
  EXPECT_EQ(a.leak_map(), b.leak_map());
  EXPECT_EQ(a.max_effect, b.max_effect);
  EXPECT_EQ(a.past_horizon, b.past_horizon);
}

TEST(AuditDevice, CudaWithoutAGpuIsAnInputError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  TorchScriptTarget t(kDir + "controls/bidirectional_attention.pt", {InputBinding::parse("tokens:64")});
  EXPECT_THROW(place_on_device(t, "cuda"), InputError);
  EXPECT_EQ(t.device().str(), "cpu");
}

TEST(AuditDevice, ControlsAndSignatureSuitesGiveTheCpuAuditOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a GPU";
  for (const char* suite : {"controls.json", "signature.json"}) {
    SCOPED_TRACE(suite);
    AuditOptions cpu, cuda;
    cuda.device = "cuda";
    const auto a = run_audit_suite(kDir + suite, cpu, open_model_file);
    const auto b = run_audit_suite(kDir + suite, cuda, open_model_file);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(a[i].name);
      EXPECT_TRUE(b[i].pass) << b[i].detail;
      EXPECT_EQ(a[i].verdict, b[i].verdict);
      EXPECT_EQ(a[i].horizon, b[i].horizon);
      if (a[i].result && b[i].result) {
        EXPECT_EQ(b[i].result->device, "cuda:0");
        EXPECT_EQ(moved_cells(*a[i].result), moved_cells(*b[i].result));
        EXPECT_EQ(a[i].result->past_horizon, b[i].result->past_horizon);
      }
    }
  }
}
