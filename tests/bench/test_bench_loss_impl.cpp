// --loss-impl on the command line: bench times fused and materialized side by side (one entry
// each, tagged "loss_impl"), --profile-ops reports where a step's time goes, eval gives the same
// perplexity by both paths on real WikiText-2 (to 1e-6 relative), and bad values are one-line
// usage errors.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "train/train_test_support.h"

namespace grassaudit {
namespace {

using testing::expect_usage_error;
using testing::read_json;
using testing::run_grassaudit;

TEST(BenchLossImpl, ModelBenchTimesEachImplWithItsName) {
  GRASSAUDIT_REQUIRE_BINARY();
  auto r = run_grassaudit({"bench", "--model", "tiny", "--mixer", "past,attention", "--loss-impl",
                           "fused,materialized", "--loss-chunk", "7,64", "--reps", "1", "--warmup", "0",
                           "--threads", "1", "--profile-ops"},
                          300);
  ASSERT_EQ(r.status, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.contains("results")) << r.out;
  const auto& rows = doc["results"];
  // mixers x (fused at each chunk, materialized): past/7, past/64, past/materialized, then attention.
  ASSERT_EQ(rows.size(), 6u);
  std::set<std::string> seen;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& j = rows[i];
    const std::string mixer = i < 3 ? "tiny:past" : "tiny:attention";
    EXPECT_EQ(j["mixer"], mixer);
    const std::string impl = j["loss_impl"];
    seen.insert(mixer + " " + impl + (j.contains("loss_chunk") ? std::to_string(j["loss_chunk"].get<int64_t>()) : ""));
    EXPECT_EQ(impl, i % 3 == 2 ? "materialized" : "fused");
    EXPECT_EQ(j.contains("loss_chunk"), impl == "fused") << j.dump();
    EXPECT_GT(j["tokens_per_second"].get<double>(), 0);
    EXPECT_GT(j["fraction_of_gemm"].get<double>(), 0);
    // The op profile: categories that add up to the recorded time, GEMMs among them.
    ASSERT_TRUE(j.contains("op_profile")) << j.dump();
    const auto& p = j["op_profile"];
    double sum = 0;
    for (const auto& kv : p["categories"].items()) sum += kv.value()["ms"].get<double>();
    EXPECT_NEAR(sum, p["recorded_ms"].get<double>(), 1e-6 * p["recorded_ms"].get<double>() + 1e-9);
    // An fp32 step: every GEMM is labelled by its input dtype, and all are float32.
    EXPECT_GT(p["categories"]["gemm_fp32"]["ms"].get<double>(), 0) << p["categories"].dump();
    EXPECT_FALSE(p["categories"].contains("gemm")) << "a GEMM without its dtype: " << p["categories"].dump();
    EXPECT_FALSE(p["categories"].contains("gemm_bf16")) << p["categories"].dump();
    EXPECT_GT(p["categories"]["layer_norm"]["ms"].get<double>(), 0);
    EXPECT_GT(p["categories"]["optimizer"]["ms"].get<double>(), 0);
    EXPECT_GT(p["categories"]["head_loss_elementwise"]["ms"].get<double>(), 0);
    if (mixer == "tiny:attention") EXPECT_GT(p["categories"]["attention_softmax"]["ms"].get<double>(), 0);
    EXPECT_FALSE(p["top_ops"].empty());
  }
  EXPECT_EQ(seen.size(), 6u);
}

TEST(BenchLossImpl, BadValuesAreOneLineErrors) {
  GRASSAUDIT_REQUIRE_BINARY();
  expect_usage_error({"bench", "--model", "tiny", "--mixer", "past", "--loss-impl", "chunked"},
                     "--loss-impl must be fused or materialized, got 'chunked'");
  expect_usage_error({"bench", "--model", "tiny", "--mixer", "past", "--loss-impl", ","}, "--loss-impl");
  expect_usage_error({"bench", "--model", "tiny", "--mixer", "past", "--loss-chunk", "0"}, "--loss-chunk must be >= 1");
  expect_usage_error({"bench", "--model", "tiny", "--mixer", "past", "--loss-chunk", "8,x"}, "--loss-chunk");
  expect_usage_error({"bench", "--model", "tiny", "--mixer", "past", "--loss-impl", "materialized", "--loss-chunk", "8"},
                     "--loss-chunk applies to --loss-impl fused");
  expect_usage_error({"bench", "--mixer", "past", "--loss-impl", "fused"}, "--loss-impl applies to --model");
  expect_usage_error({"bench", "--mixer", "past", "--profile-ops"}, "--profile-ops applies to --model");
  expect_usage_error({"eval", "--checkpoint", "x.ckpt", "--split", "valid", "--loss-impl", "x"},
                     "--loss-impl must be fused or materialized, got 'x'");
}

// A tiny model trained 128 steps on WikiText-2 (far enough from uniform that the softmax is
// peaked), then evaluated on the first 4,096 test tokens (the tiny preset's eval limit) by both
// paths.
TEST(EvalLossImpl, FusedAndMaterializedPerplexitiesAgreeOnRealData) {
  GRASSAUDIT_REQUIRE_BINARY();
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  const std::string out = t.file("run");
  auto r = run_grassaudit({"train", "--mixer", "past", "--preset", "tiny", "--max-tokens", "8192", "--out", out,
                           "--threads", "1", "--seed", "3", "--data-dir", data});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json got[2];
  const char* impls[2] = {"fused", "materialized"};
  for (int i = 0; i < 2; ++i) {
    const std::string json = t.file(std::string("eval-") + impls[i] + ".json");
    auto e = run_grassaudit({"eval", "--checkpoint", out + "/checkpoints/last.ckpt", "--split", "test", "--json", json,
                             "--threads", "1", "--data-dir", data, "--loss-impl", impls[i]});
    ASSERT_EQ(e.status, 0) << e.err;
    got[i] = read_json(json);
    EXPECT_EQ(got[i]["loss_impl"], impls[i]);
  }
  ASSERT_TRUE(got[0].contains("ppl")) << got[0].dump();
  EXPECT_EQ(got[0]["tokens"], got[1]["tokens"]);
  EXPECT_GT(got[0]["tokens"].get<int64_t>(), 1000);
  const double ppl_f = got[0]["ppl"], ppl_m = got[1]["ppl"];
  const double rel = std::abs(ppl_f - ppl_m) / ppl_m;
  std::cout << "test ppl fused " << ppl_f << ", materialized " << ppl_m << ", relative difference " << rel << "\n";
  EXPECT_LE(rel, 1e-6);
  EXPECT_LE(std::abs(got[0]["loss"].get<double>() - got[1]["loss"].get<double>()), 1e-6 * got[1]["loss"].get<double>());
  // It learned something (uniform would be V = 30,522), and the figure is a perplexity.
  EXPECT_TRUE(std::isfinite(ppl_f));
  EXPECT_GT(ppl_f, 1.0);
  EXPECT_LT(ppl_f, 20000.0);
}

}  // namespace
}  // namespace grassaudit
