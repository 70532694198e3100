// The trainer in-process on the tiny preset with real WikiText-2 (wordpiece): determinism,
// bit-exact resume, and the audit gate's quarantine of a leaky (future-pairing) model.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "train/presets.h"
#include "train/trainer.h"
#include "train_test_support.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using nlohmann::json;
using testing::read_json;
using testing::read_jsonl;

constexpr int64_t kTinyTokensPerStep = 4 * 16;  // tiny: batch 4, L 16

TrainRequest tiny_request(const std::string& data, const std::string& mixer, const std::string& out,
                          int64_t max_tokens) {
  at::set_num_threads(1);
  Preset p = get_preset("tiny");
  TrainRequest r;
  r.model = p.model;
  r.model.mixer = mixer;
  r.train = p.train;
  r.train.max_tokens = max_tokens;
  r.preset = p.name;
  r.out_dir = out;
  r.data_dir = data;
  r.cache_dir = testing::shared_cache_dir();
  r.plain_progress = true;
  return r;
}

struct TrainLine {
  int64_t step;
  double loss, lr;
  bool operator==(const TrainLine& o) const { return step == o.step && loss == o.loss && lr == o.lr; }
};

std::vector<TrainLine> train_lines(const std::string& metrics) {
  std::vector<TrainLine> out;
  for (const auto& j : read_jsonl(metrics))
    if (j["type"] == "train") out.push_back({j["step"].get<int64_t>(), j["loss"].get<double>(), j["lr"].get<double>()});
  return out;
}

TEST(Trainer, SameSeedSameLosses) {
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  run_training(tiny_request(data, "past", t.file("a"), 10 * kTinyTokensPerStep));
  run_training(tiny_request(data, "past", t.file("b"), 10 * kTinyTokensPerStep));
  auto a = train_lines(t.file("a/metrics.jsonl"));
  auto b = train_lines(t.file("b/metrics.jsonl"));
  ASSERT_EQ(a.size(), 10u);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(read_json(t.file("a/summary.json"))["test_ppl"], read_json(t.file("b/summary.json"))["test_ppl"]);
  // A different seed gives a different run (the test above is not vacuous).
  TrainRequest other = tiny_request(data, "past", t.file("c"), 10 * kTinyTokensPerStep);
  other.train.seed = 99;
  run_training(other);
  auto c = train_lines(t.file("c/metrics.jsonl"));
  EXPECT_NE(a.front().loss, c.front().loss);
}

TEST(Trainer, ResumeIsBitExact) {
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  const int64_t K = 16;
  // Uninterrupted: K steps.
  auto full = run_training(tiny_request(data, "past", t.file("full"), K * kTinyTokensPerStep));
  EXPECT_TRUE(full.completed);
  EXPECT_EQ(full.steps, K);
  // K/2 steps, stop (evaluation, checkpoint), then resume to K.
  auto half = run_training(tiny_request(data, "past", t.file("split"), K / 2 * kTinyTokensPerStep));
  EXPECT_EQ(half.steps, K / 2);
  TrainRequest resume;
  resume.resume = t.file("split/checkpoints/last.ckpt");
  resume.max_tokens_override = K * kTinyTokensPerStep;
  resume.out_dir = t.file("split");
  resume.data_dir = data;
  resume.cache_dir = testing::shared_cache_dir();
  resume.plain_progress = true;
  auto rest = run_training(resume);
  EXPECT_TRUE(rest.completed);
  EXPECT_EQ(rest.steps, K);

  auto a = train_lines(t.file("full/metrics.jsonl"));
  auto b = train_lines(t.file("split/metrics.jsonl"));
  ASSERT_EQ(a.size(), static_cast<size_t>(K));
  ASSERT_EQ(b.size(), static_cast<size_t>(K));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].loss, b[i].loss) << "step " << a[i].step;  // bit-exact, not approximately
    EXPECT_EQ(a[i].lr, b[i].lr);
  }
  // Same final weights: the final validation audits record the same hash.
  auto sa = read_json(t.file("full/summary.json"));
  auto sb = read_json(t.file("split/summary.json"));
  EXPECT_EQ(sa["tokens_seen"], sb["tokens_seen"]);
  auto last_valid_hash = [](const std::string& metrics) {
    std::string h;
    for (const auto& j : read_jsonl(metrics))
      if (j["type"] == "eval" && j["split"] == "valid") h = j["weights_sha256"];
    return h;
  };
  EXPECT_EQ(last_valid_hash(t.file("full/metrics.jsonl")), last_valid_hash(t.file("split/metrics.jsonl")));
  EXPECT_FALSE(last_valid_hash(t.file("full/metrics.jsonl")).empty());
}

bool has_plain_ppl_key(const json& j) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() >= 3 && k.compare(k.size() - 3, 3, "ppl") == 0 && k.rfind("quarantined_", 0) != 0) return true;
  }
  return false;
}

TEST(Trainer, FutureMixerIsQuarantined) {
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  run_training(tiny_request(data, "future", t.file("f"), 4 * kTinyTokensPerStep));
  auto s = read_json(t.file("f/summary.json"));
  EXPECT_EQ(s["audit"]["verdict"], "leaky");
  EXPECT_GT(s["audit"]["leak_horizon"].get<int64_t>(), 0);
  EXPECT_TRUE(s.contains("quarantined_best_valid_ppl"));
  EXPECT_TRUE(s.contains("quarantined_test_ppl"));
  EXPECT_FALSE(s.contains("best_valid_ppl"));
  EXPECT_FALSE(s.contains("test_ppl"));
  EXPECT_FALSE(has_plain_ppl_key(s));
  EXPECT_EQ(s["mixer"], "future");
  EXPECT_EQ(s["pairing"], "future");
  EXPECT_EQ(s["audit"]["weights_sha256"].get<std::string>().size(), 64u);
  int evals = 0;
  for (const auto& j : read_jsonl(t.file("f/metrics.jsonl"))) {
    EXPECT_FALSE(has_plain_ppl_key(j)) << j.dump();
    if (j["type"] == "eval") {
      ++evals;
      EXPECT_TRUE(j.contains("quarantined_ppl"));
      EXPECT_EQ(j["audit_verdict"], "leaky");
      EXPECT_EQ(j["weights_sha256"].get<std::string>().size(), 64u);
    }
  }
  EXPECT_EQ(evals, 2);  // final validation, test
  EXPECT_EQ(read_json(t.file("f/audit.json"))["verdict"], "leaky");
}

TEST(Trainer, CausalMixersReportPlainPerplexity) {
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  for (const char* mixer : {"past", "attention"}) {
    testing::TempDir t;
    run_training(tiny_request(data, mixer, t.file("r"), 4 * kTinyTokensPerStep));
    auto s = read_json(t.file("r/summary.json"));
    EXPECT_EQ(s["audit"]["verdict"], "causal") << mixer;
    EXPECT_TRUE(s.contains("best_valid_ppl")) << mixer;
    EXPECT_TRUE(s.contains("test_ppl")) << mixer;
    EXPECT_FALSE(s.contains("quarantined_best_valid_ppl")) << mixer;
    EXPECT_FALSE(s.contains("quarantined_test_ppl")) << mixer;
    EXPECT_GT(s["test_ppl"].get<double>(), 1.0);
    EXPECT_EQ(s["pairing"], std::string(mixer) == "attention" ? "causal-mask" : "past");
    for (const char* key : {"run", "task", "tokenizer", "dataset", "seq_len", "layers", "d_model", "params",
                            "epochs", "tokens_seen", "wall_seconds", "threads", "blas", "tokens_per_second"})
      EXPECT_TRUE(s.contains(key)) << key;
    EXPECT_EQ(s["run"], "r");
    EXPECT_EQ(s["tokens_seen"], 4 * kTinyTokensPerStep);
    auto cfg = read_json(t.file("r/config.json"));
    EXPECT_EQ(cfg["model"]["mixer"], mixer);
    EXPECT_EQ(cfg["model"]["vocab_size"], 30522);
    EXPECT_TRUE(std::filesystem::exists(t.file("r/checkpoints/best.ckpt")));
    EXPECT_TRUE(std::filesystem::exists(t.file("r/checkpoints/last.ckpt")));
  }
}

TEST(Trainer, RefusesToOverwriteARun) {
  GRASSAUDIT_REQUIRE_WIKITEXT(data);
  testing::TempDir t;
  run_training(tiny_request(data, "past", t.file("r"), 2 * kTinyTokensPerStep));
  EXPECT_THROW(run_training(tiny_request(data, "past", t.file("r"), 2 * kTinyTokensPerStep)), InputError);
}

}  // namespace
}  // namespace grassaudit
