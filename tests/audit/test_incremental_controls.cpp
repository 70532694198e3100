// The cache-consistency audit on the incremental controls
// (reference/make_incremental_controls.py, brute force on the saved files): a correct KV cache,
// rotary cache, sliding-window cache, recurrent state and streaming convolution are consistent;
// the classic bugs are not (position offset not advanced, rotary offset off by one, mask rows
// wrong for several tokens at once, a window evicted one too early, one row's cache for every
// row, a too-short convolution buffer), a cache kept in a module attribute fails isolation, and
// a model without the API is refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>

#include "audit/audit_suite.h"
#include "formats/model_file.h"
#include "audit/incremental_audit.h"
#include "audit/model_signature.h"
#include "formats/torchscript/torchscript_target.h"
#include "util/error.h"

using namespace grassaudit;

namespace {
const std::string kAuditsRoot = std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/";

IncrementalResult audit_file(const std::string& file, const std::string& input = "tokens:64") {
  TorchScriptTarget t(kAuditsRoot + "incremental/" + file, {InputBinding::parse(input)});
  IncrementalOptions o;
  o.seq_len = 32;
  return run_incremental_audit(t, o);
}
}  // namespace

TEST(IncrementalControls, MatchBruteForce) {
  AuditOptions o;
  auto results = run_audit_suite(kAuditsRoot + "incremental.json", o, open_model_file);
  ASSERT_GE(results.size(), 13u);
  for (const auto& r : results) EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
}

TEST(IncrementalControls, ACorrectCacheIsDecidedInFloat64AtRoundingLevel) {
  const auto r = audit_file("kv_cache.pt");
  EXPECT_TRUE(r.holds());
  EXPECT_FALSE(r.max_effect_own);  // float32 steps and forward differ in shape: not compared ...
  EXPECT_EQ(r.precision, "float64");  // ... float64 decides
  EXPECT_LT(r.max_effect, 1e-12);
  EXPECT_EQ(r.threshold, kLeakThreshold64);
  EXPECT_GE(r.partitions.size(), 5u);
}

TEST(IncrementalControls, TheMaskBugShowsOnlyWhenSeveralTokensArriveAfterAPrefix) {
  const auto r = audit_file("kv_cache_mask_wrong_rows.pt");
  EXPECT_FALSE(r.consistent);
  ASSERT_TRUE(r.first_position.has_value());
  EXPECT_NE(r.first_partition, "one position at a time");
  EXPECT_NE(r.evidence.text.find("step()"), std::string::npos) << r.evidence.text;
}

TEST(IncrementalControls, ACacheInAModuleAttributeFailsIsolationAndTheModuleComesBackAsLoaded) {
  TorchScriptTarget t(kAuditsRoot + "incremental/cache_in_module_attribute.pt", {InputBinding::parse("tokens:64")});
  IncrementalOptions o;
  o.seq_len = 32;
  const auto first = run_incremental_audit(t, o);
  EXPECT_TRUE(first.consistent);
  EXPECT_FALSE(first.isolation);
  EXPECT_GT(first.fresh_state_effect, 1e-3);
  // The module's attributes were put back: a second audit in-process sees the same.
  const auto second = run_incremental_audit(t, o);
  EXPECT_EQ(second.consistent, first.consistent);
  EXPECT_EQ(second.fresh_state_effect, first.fresh_state_effect);
}

TEST(IncrementalControls, OneRowsCacheForEveryRowNeedsRowsThatDiffer) {
  const auto r = audit_file("one_row_cache.pt");
  EXPECT_FALSE(r.consistent);
}

TEST(IncrementalControls, FeaturesInputsAndAModelWithoutTheApi) {
  EXPECT_TRUE(audit_file("streaming_conv.pt", "features:4").holds());
  EXPECT_FALSE(audit_file("streaming_conv_short_buffer.pt", "features:4").consistent);
  try {
    audit_file("no_incremental_api.pt");
    FAIL() << "a model without init_state/step must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no incremental API"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("init_state(self, batch: int)"), std::string::npos) << e.what();
  }
}

TEST(IncrementalPartitions, CoverLAndIncludeThePromisedShapes) {
  for (int64_t L : {1, 2, 5, 17, 32, 128}) {
    for (bool cheap : {false, true}) {
      const auto parts = incremental_partitions(L, 1234, 2, cheap);
      EXPECT_EQ(parts.size(), cheap ? 2u : (L >= 5 ? 5u : (L >= 2 ? 4u : 3u))) << L;
      for (const auto& p : parts) {
        int64_t sum = 0;
        for (int64_t n : p.sizes) {
          EXPECT_GE(n, 1);
          sum += n;
        }
        EXPECT_EQ(sum, L) << p.name;
      }
    }
  }
}
