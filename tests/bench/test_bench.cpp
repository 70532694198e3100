// The bench command's contract (JSON fields, exit status 2 on bad flags) and its helpers.
// (The custom-backward kernel tests that lived here are in tests/core/test_pluecker_kernels.cpp
// and tests/core/test_attention_blocked.cpp.)
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bench/bench.h"

using namespace grassaudit;

namespace {

struct RunResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the grassaudit binary with `args` (shell words), capturing stdout and stderr.
RunResult run_cli(const std::string& args) {
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(std::rand());
  const std::string out = ::testing::TempDir() + "bench_out_" + tag, err = ::testing::TempDir() + "bench_err_" + tag;
  const std::string cmd = std::string(GRASSAUDIT_BINARY) + " " + args + " >" + out + " 2>" + err;
  RunResult r;
  int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

const char* kSmall = "--batch 2 --seq-len 24 --d-model 32 --rank 6 --offsets 1,2,4 --heads 4 --reps 2 --warmup 1 --threads 1";

void expect_contract_fields(const nlohmann::json& j) {
  for (const char* key : {"mixer", "batch", "seq_len", "tokens_per_second", "ms_per_step", "threads", "peak_rss_mb",
                          "blas", "machine"})
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << j.dump();
  ASSERT_TRUE(j["ms_per_step"].is_object());
  for (const char* key : {"median", "min", "max"}) EXPECT_TRUE(j["ms_per_step"].contains(key)) << key;
  EXPECT_GT(j["tokens_per_second"].get<double>(), 0);
  EXPECT_LE(j["ms_per_step"]["min"].get<double>(), j["ms_per_step"]["median"].get<double>());
  EXPECT_LE(j["ms_per_step"]["median"].get<double>(), j["ms_per_step"]["max"].get<double>());
  EXPECT_GT(j["peak_rss_mb"].get<double>(), 0);
  EXPECT_EQ(j["threads"].get<int>(), 1);
  EXPECT_FALSE(j["blas"].get<std::string>().empty());
  EXPECT_FALSE(j["machine"].get<std::string>().empty());
}

}  // namespace

TEST(BenchCli, LayerJsonHasEveryContractField) {
  const std::string path = ::testing::TempDir() + "bench_layer_" + std::to_string(::getpid()) + ".json";
  auto r = run_cli(std::string("bench --mixer past ") + kSmall + " --json " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  auto printed = nlohmann::json::parse(r.out);
  auto written = nlohmann::json::parse(slurp(path));
  EXPECT_EQ(printed, written);
  expect_contract_fields(written);
  EXPECT_EQ(written["mixer"], "past");
  EXPECT_EQ(written["batch"], 2);
  EXPECT_EQ(written["seq_len"], 24);
  EXPECT_NE(r.err.find("BLAS"), std::string::npos) << "runtime banner expected on stderr";
  std::remove(path.c_str());
}

TEST(BenchCli, SeveralMixersInterleavedGiveResultsArray) {
  auto r = run_cli(std::string("bench --mixer past,attention,literal-future --offset-mode per-layer ") + kSmall);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("results"));
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][1]["mixer"], "attention");
  for (const auto& e : j["results"]) expect_contract_fields(e);
}

TEST(BenchCli, FixedTokenSweepInOneRun) {
  auto r = run_cli("bench --mixer past,attention --tokens 96 --seq-len 24,48 --d-model 16 --rank 4 --offsets 1,2 "
                   "--reps 1 --warmup 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][0]["seq_len"], 24);
  EXPECT_EQ(j["results"][0]["batch"], 4);
  EXPECT_EQ(j["results"][3]["seq_len"], 48);
  EXPECT_EQ(j["results"][3]["batch"], 2);
  EXPECT_EQ(j["results"][3]["mixer"], "attention");
}

TEST(BenchCli, ModelStepReportsFlops) {
  auto r = run_cli(
      "bench --model paper-6l-L128 --mixer past --vocab-size 64 --d-model 32 --rank 4 --d-ff 64 --batch 2 "
      "--seq-len 24 --reps 1 --warmup 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  expect_contract_fields(j);
  EXPECT_EQ(j["mixer"], "paper-6l-L128:past");
  EXPECT_GT(j["achieved_gflops"].get<double>(), 0);
  EXPECT_GT(j["gemm_gflops"].get<double>(), 0);
}

TEST(BenchCli, BadFlagsExitTwo) {
  const std::string base = "bench --threads 1 --reps 1 --warmup 0 --d-model 16 --rank 4 --seq-len 24 --batch 1 ";
  for (const std::string bad :
       {"--mixer past --batch 0", "--mixer past --seq-len abc", "--mixer past --reps 0", "--mixer past --bogus 1",
        "--mixer past --offset-mode sideways", "--mixer past --offsets 1,x", "--mixer past --offsets 30",
        "--mixer attention --heads 3", "--mixer past --rank 1", "--mixer past stray", "--batch 2",
        "--model no-such-preset --mixer past", "--mixer past --warmup -1", "--mixer past --tokens 10",
        "--mixer past --tokens 48 --batch 2", "--mixer past --seq-len 24,1"}) {
    auto r = run_cli(base + bad);
    EXPECT_EQ(r.status, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("grassaudit bench: error:"), std::string::npos) << bad << "\n" << r.err;
  }
  auto r = run_cli(base + "--mixer nonesuch");
  EXPECT_EQ(r.status, 2);
  for (const char* name : {"attention", "future", "past", "literal-past", "literal-future"})
    EXPECT_NE(r.err.find(name), std::string::npos) << "valid names should be listed: " << r.err;
}

TEST(BenchUnits, PeakRssAndLayerConfig) {
  EXPECT_GT(peak_rss_mb(), 1.0);
  LayerBenchOptions o;
  o.model.offsets = {3, 5, 7};
  o.model.offset_mode = "per-layer";
  auto c = layer_bench_config(o, "past", 16);
  EXPECT_EQ(c.layer_offsets(0), std::vector<int64_t>{3});  // per-layer: offsets[0] only
  o.model.offset_mode = "all";
  c = layer_bench_config(o, "past", 16);
  EXPECT_EQ(c.layer_offsets(0), (std::vector<int64_t>{3, 5, 7}));
}

// Decode mode: past and attention generate through their incremental paths
// at each context; the Grassmann state stays the last max-offset reduced states whatever the
// context, the KV cache grows with it; the future mixer has no decode mode (one line).
TEST(BenchCli, DecodeModeMeasuresEveryContextAndTheStateSize) {
  auto r = run_cli(
      "bench --decode --model paper-6l-L128 --mixer past,attention --vocab-size 64 --d-model 32 --rank 4 --d-ff 64 "
      "--contexts 8,32,64 --decode-steps 4 --reps 2 --warmup 0 --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["decode"].size(), 6u);
  std::map<std::string, std::vector<int64_t>> bytes;
  for (const auto& e : j["decode"]) {
    EXPECT_GT(e["tokens_per_second"].get<double>(), 0);
    EXPECT_LE(e["ms_per_token"]["min"].get<double>(), e["ms_per_token"]["max"].get<double>());
    EXPECT_EQ(e["threads"].get<int>(), 1);
    EXPECT_FALSE(e["machine"].get<std::string>().empty());
    bytes[e["mixer"].get<std::string>()].push_back(e["state_bytes"].get<int64_t>());
  }
  ASSERT_EQ(bytes["past"].size(), 3u);
  // past: per layer [1, min(T, its largest offset), r] floats: the same at contexts 32 and 64 (offsets <= 16)
  EXPECT_EQ(bytes["past"][1], bytes["past"][2]);
  EXPECT_LT(bytes["attention"][0], bytes["attention"][1]);
  EXPECT_LT(bytes["attention"][1], bytes["attention"][2]);
  EXPECT_LT(bytes["past"][2], bytes["attention"][2]);

  auto f = run_cli("bench --decode --model paper-6l-L128 --mixer future --vocab-size 64 --d-model 32 --rank 4 "
                   "--d-ff 64 --contexts 8 --threads 1");
  EXPECT_EQ(f.status, 2);
  EXPECT_NE(f.err.find("tokens that do not exist yet"), std::string::npos) << f.err;
  auto g = run_cli("bench --decode --mixer past --contexts 8 --threads 1");
  EXPECT_EQ(g.status, 2);
  EXPECT_NE(g.err.find("--decode needs --model"), std::string::npos) << g.err;
}
