// summary.json's one schema (util/run_summary.h): what the reader takes from every committed run
// is written back unchanged, counts stay integers and fractions stay floats, and the checks keep
// their order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "util/error.h"
#include "util/run_summary.h"

using namespace grassaudit;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json read_json(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::string summary_error_of(const json& j) {
  try {
    read_run_summary(j, "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// Every key the reader keeps comes back with the committed text (same value, same number kind).
TEST(RunSummary, CommittedRunsReadAndWriteBackTheirKeys) {
  int runs = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(GRASSAUDIT_SOURCE_DIR) / "reports" / "runs")) {
    const fs::path file = entry.path() / "summary.json";
    if (!fs::exists(file)) continue;
    ++runs;
    const json committed = read_json(file);
    const json back = to_json(read_run_summary(committed, file.string()));
    for (const auto& [key, value] : back.items()) {
      ASSERT_TRUE(committed.contains(key)) << file << ": " << key;
      EXPECT_EQ(value.dump(), committed.at(key).dump()) << file << ": " << key;
    }
  }
  EXPECT_GE(runs, 2);
}

TEST(RunSummary, CountsStayIntegersAndFractionsStayFloats) {
  RunSummary lm;
  lm.run = "r";
  lm.params = 492328;
  lm.lm.mixer = {MixerFamily::kAttention, MixerPairing::kCausalMask};
  lm.lm.pairing = MixerPairing::kCausalMask;
  lm.lm.epochs = 1.0;
  lm.lm.tokens_seen = 2048;
  lm.lm.seed = 18446744073709551615ull;
  lm.audit = SummaryAudit{"causal", 0, 0.0, "ab"};
  lm.lm.best_valid_ppl = 300.5;
  const std::string text = to_json(lm).dump();
  EXPECT_NE(text.find(R"("params":492328,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("epochs":1.0,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("tokens_seen":2048)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("seed":18446744073709551615)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("mixer":"attention","pairing":"causal-mask")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("audit":{"leak_horizon":0,"max_effect":0.0,"verdict":"causal","weights_sha256":"ab"})"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("family"), std::string::npos) << text;  // not restated unless set
  EXPECT_EQ(text.find("provenance"), std::string::npos) << text;

  RunSummary snli;
  snli.task = "snli";
  snli.snli.head = "transformer";
  snli.snli.epochs = 2;
  snli.snli.val_acc = {0.5};
  const std::string s = to_json(snli).dump();
  EXPECT_NE(s.find(R"("epochs":2,)"), std::string::npos) << s;
  EXPECT_NE(s.find(R"("seeds":[])"), std::string::npos) << s;
  EXPECT_EQ(s.find("mixer"), std::string::npos) << s;  // only the keys of its task
}

TEST(RunSummary, ReadsBackWhatItWrites) {
  RunSummary lm;
  lm.lm.mixer = {MixerFamily::kGrassmann, MixerPairing::kFuture};
  lm.lm.family = MixerFamily::kGrassmann;
  lm.lm.offsets = std::vector<long long>{1, 2};
  lm.lm.norm = "pre";
  lm.audit = SummaryAudit{"leaky", 3, 0.8, "cd"};
  lm.lm.quarantined_test_ppl = 1e4;
  const RunSummary back = read_run_summary(to_json(lm), "w");
  EXPECT_EQ(back.lm.mixer.pairing, MixerPairing::kFuture);
  EXPECT_EQ(back.lm.family, MixerFamily::kGrassmann);
  EXPECT_EQ(back.lm.offsets, (std::vector<long long>{1, 2}));
  EXPECT_EQ(back.lm.norm, "pre");
  ASSERT_TRUE(back.audit);
  EXPECT_EQ(back.audit->leak_horizon, 3);
  EXPECT_EQ(back.lm.quarantined_test_ppl, 1e4);
  EXPECT_FALSE(back.lm.test_ppl);
}

// A summary with several faults names the one the report has always named first.
TEST(RunSummary, ChecksKeepTheirOrder) {
  const json bad_provenance_and_blas = json::parse(
      R"({"mixer": "past", "blas": 3, "provenance": {"git_commit": "x"}})");
  EXPECT_NE(summary_error_of(bad_provenance_and_blas).find("s.json: provenance: 'git_commit' must be 40 hex digits"),
            std::string::npos)
      << summary_error_of(bad_provenance_and_blas);
  const json bad_threads_and_provenance = json::parse(
      R"({"mixer": "past", "threads": "2", "provenance": {"git_commit": "x"}})");
  EXPECT_EQ(summary_error_of(bad_threads_and_provenance), "s.json: 'threads' must be an integer");
  EXPECT_EQ(summary_error_of(json::parse(R"({"mixer": "lstm"})")),
            "s.json: 'mixer' must be future, past or attention, got \"lstm\"");
  EXPECT_EQ(summary_error_of(json::parse(R"({"task": "snli", "head": "grassmann", "val_acc": [0.5], "seeds": [1, 2]})")),
            "s.json: 'seeds' and 'val_acc' differ in length");
  EXPECT_EQ(summary_error_of(json::parse(R"({"audit": {"verdict": "leaky"}, "mixer": "future", "test_ppl": 3.0})")),
            "s.json: malformed artifact: audit verdict is leaky but 'test_ppl' is a plain perplexity key "
            "(leaky runs must use 'quarantined_test_ppl')");
}
