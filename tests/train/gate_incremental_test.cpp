// The audit gate checks the incremental path of a built-in model too: two
// partitions and the isolation runs, decided in float64, before any perplexity; the future
// mixer has none and says so; a leaky model is quarantined without it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "core/language_model.h"
#include "core/model_config.h"
#include "audit/incremental_audit.h"
#include "train/gate.h"

using namespace grassaudit;

namespace {
LanguageModel tiny(const std::string& mixer) {
  ModelConfig c;
  c.mixer = mixer;
  c.vocab_size = 50;
  c.d_model = 16;
  c.rank = 4;
  c.layers = 2;
  c.max_len = 16;
  c.heads = 2;
  c.d_ff = 32;
  c.offsets = {1, 2};
  at::manual_seed(5);
  return LanguageModel(c);
}
bool has_check(const AuditResult& r, const std::string& name) {
  return std::any_of(r.seconds_by_check.begin(), r.seconds_by_check.end(),
                     [&](const auto& kv) { return kv.first == name; });
}
}  // namespace

TEST(GateIncremental, CausalModelsGetTheirIncrementalPathAudited) {
  for (const std::string mixer : {"past", "attention"}) {
    auto model = tiny(mixer);
    AuditGate gate(gate_audit_options(16, 2, 8, 1234));
    const auto& r = gate.audit(model);
    EXPECT_EQ(r.verdict(), Verdict::kCausal) << mixer;
    ASSERT_TRUE(r.incremental) << mixer;
    const auto inc = to_json(*r.incremental);
    EXPECT_TRUE(inc["holds"].get<bool>()) << mixer;
    EXPECT_EQ(inc["partitions"].size(), 2u);
    // Steps and forward differ in shape: a float32 model is compared in float64 directly
    // (whether float32 agrees bit for bit depends on the CPU and the threads, not the model).
    EXPECT_EQ(inc["precision"], "float64");
    EXPECT_TRUE(inc["effect_own_dtype"].is_null());
    EXPECT_TRUE(has_check(r, "incremental"));
  }
}

TEST(GateIncremental, TheLeakyFutureModelIsQuarantinedWithoutIt) {
  auto model = tiny("future");
  AuditGate gate(gate_audit_options(16, 2, 8, 1234));
  const auto& r = gate.audit(model);
  EXPECT_EQ(r.verdict(), Verdict::kLeaky);
  EXPECT_FALSE(r.incremental);
  EXPECT_FALSE(has_check(r, "incremental"));
}
