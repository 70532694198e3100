// Malformed artifacts: each is an InputError that names the offending file.
#include <gtest/gtest.h>

#include <string>

#include "report/report.h"
#include "report/runs.h"
#include "report_test_util.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using testing::ScratchDir;
namespace fs = std::filesystem;

// Copies the fixture runs to a scratch folder, applies `mutate`, runs the generator and
// returns the InputError message (empty if none was thrown).
template <typename F>
std::string report_error(F mutate) {
  ScratchDir dir;
  const fs::path runs = dir.path() / "runs";
  testing::copy_fixture_runs(runs);
  mutate(runs);
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.runs_dir = runs.string();
  try {
    generate_report(o);
  } catch (const InputError& e) {
    EXPECT_FALSE(fs::exists(dir.path() / "out" / "README.md")) << "nothing written on error";
    return e.what();
  }
  return "";
}

std::string leaky_summary(const std::string& extra) {
  return R"({"run": "x", "task": "lm", "mixer": "future", "pairing": "future",
             "audit": {"verdict": "leaky", "leak_horizon": 43},
             "quarantined_best_valid_ppl": 5.0)" +
         extra + "}";
}

TEST(ReportErrors, LeakyRunWithPlainPerplexityKeyIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "bad-leaky" / "summary.json",
                        leaky_summary(R"(, "best_valid_ppl": 5.0)"));
  });
  EXPECT_NE(msg.find("bad-leaky/summary.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed artifact"), std::string::npos) << msg;
  EXPECT_NE(msg.find("best_valid_ppl"), std::string::npos) << msg;
}

TEST(ReportErrors, LeakyRunWithPlainTestPerplexityIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "bad-leaky" / "summary.json", leaky_summary(R"(, "test_ppl": 5.0)"));
  });
  EXPECT_NE(msg.find("test_ppl"), std::string::npos) << msg;
}

TEST(ReportErrors, LeakyEvalLineWithPlainPplIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "future-wp-l128-n6" / "metrics.jsonl",
                        "{\"type\":\"eval\",\"epoch\":1,\"split\":\"valid\",\"ppl\":6.0,"
                        "\"audit_verdict\":\"leaky\"}\n");
  });
  EXPECT_NE(msg.find("future-wp-l128-n6/metrics.jsonl"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed artifact"), std::string::npos) << msg;
}

TEST(ReportErrors, CausalRunWithQuarantinedKeyIsRejected) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "odd" / "summary.json",
                        R"({"mixer": "past", "audit": {"verdict": "causal"},
                            "quarantined_best_valid_ppl": 5.0})");
  });
  EXPECT_NE(msg.find("odd/summary.json"), std::string::npos) << msg;
}

TEST(ReportErrors, BadJsonInSummaryNamesTheFile) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "past-wp-l128-n6" / "summary.json", "{\"mixer\": \"past\",");
  });
  EXPECT_NE(msg.find("past-wp-l128-n6/summary.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
}

TEST(ReportErrors, BadJsonLineInMetricsNamesFileAndLine) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "attn-wp-l128-n6" / "metrics.jsonl",
                        "{\"type\":\"train\",\"step\":1}\n\n{\"type\": eval}\n");
  });
  EXPECT_NE(msg.find("attn-wp-l128-n6/metrics.jsonl:3"), std::string::npos) << msg;
}

TEST(ReportErrors, BadJsonInAuditNamesTheFile) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "attn-wp-l128-n6" / "audit.json", "not json");
  });
  EXPECT_NE(msg.find("attn-wp-l128-n6/audit.json"), std::string::npos) << msg;
}

TEST(ReportErrors, AuditVerdictContradictingSummary) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "attn-wp-l128-n6" / "audit.json", R"({"verdict": "leaky"})");
  });
  EXPECT_NE(msg.find("contradicts"), std::string::npos) << msg;
}

TEST(ReportErrors, WrongTypeNamesFileAndKey) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "typed" / "summary.json",
                        R"({"mixer": "past", "seq_len": "long", "audit": {"verdict": "causal"}})");
  });
  EXPECT_NE(msg.find("typed/summary.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'seq_len'"), std::string::npos) << msg;
}

TEST(ReportErrors, UnknownVerdict) {
  const std::string msg = report_error([](const fs::path& runs) {
    testing::write_text(runs / "v" / "summary.json",
                        R"({"mixer": "past", "audit": {"verdict": "probably fine"}})");
  });
  EXPECT_NE(msg.find("v/summary.json"), std::string::npos) << msg;
}

TEST(ReportErrors, BadBenchJsonNamesTheFile) {
  ScratchDir dir;
  testing::write_text(dir.path() / "bench" / "broken.json", "{\"results\": [");
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.bench_dir = (dir.path() / "bench").string();
  try {
    generate_report(o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bench/broken.json"), std::string::npos) << e.what();
  }
}

TEST(ReportErrors, MissingReferenceNamesTheFile) {
  ScratchDir dir;
  ReportOptions o = testing::fixture_options(dir.path() / "out");
  o.reference_dir = (dir.path() / "nowhere").string();
  try {
    generate_report(o);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("published/paper.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grassaudit
