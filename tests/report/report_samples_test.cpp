// The report's Samples section: one short sample per valid paper-size run
// from its sample.json, or why it has none; leaky and small runs are not listed; a sample whose
// weights are not the audited ones is refused when the run is loaded.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "report/detail_tables.h"
#include "report/runs.h"
#include "util/error.h"

using namespace grassaudit;
namespace fs = std::filesystem;

namespace {
RunRecord lm_run(const std::string& name, const std::string& verdict, long long d_model) {
  RunRecord r;
  r.name = name;
  r.task = "lm";
  r.audit.verdict = verdict;
  r.d_model = d_model;
  return r;
}
}  // namespace

TEST(ReportSamples, OnePerValidPaperSizeRun) {
  auto with = lm_run("paper-past", "causal", 256);
  RunSample s;
  s.prompt = "= robert boulter =";
  s.text = "is an english actor";
  s.seed = 1;
  s.top_k = 40;
  s.temperature = 0.8;
  with.sample = s;
  const auto without = lm_run("paper-attention", "causal", 256);
  const auto leaky = lm_run("paper-future", "leaky", 256);
  const auto small = lm_run("cpu-small-past", "causal", 128);
  const std::string md = render_samples({with, without, leaky, small});
  EXPECT_NE(md.find("**paper-past** (seed 1, temperature 0.8, top-k 40): *= robert boulter =* → is an english actor"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**paper-attention**: no sample.json"), std::string::npos) << md;
  EXPECT_EQ(md.find("paper-future"), std::string::npos) << md;
  EXPECT_EQ(md.find("cpu-small"), std::string::npos) << md;
  EXPECT_EQ(render_samples({leaky, small}), "");
}

TEST(ReportSamples, ASampleOfOtherWeightsIsRefused) {
  const fs::path dir = fs::path(::testing::TempDir()) / "report-sample-run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "summary.json") << R"({"mixer": "past", "d_model": 256, "test_ppl": 100.0,
    "audit": {"verdict": "causal", "leak_horizon": 0, "weights_sha256": "aaaa"}})";
  std::ofstream(dir / "sample.json") << R"({"prompt": "p", "text": "t", "weights_sha256": "bbbb"})";
  try {
    load_run(dir.string());
    FAIL() << "a sample of other weights must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sample.json"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "sample.json") << R"({"prompt": "p", "text": "t", "weights_sha256": "aaaa", "seed": 3})";
  const auto run = load_run(dir.string());
  ASSERT_TRUE(run.sample.has_value());
  EXPECT_EQ(run.sample->text, "t");
  fs::remove_all(dir);
}
