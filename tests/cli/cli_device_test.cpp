// audit --device: where the model runs and is probed. On the CPU, --device cpu gives the audit of
// no flag, field for field (what it spent aside): the built-in model is moved to the CPU it is on
// (LanguageModel::to) and its inputs pass through .to(device); a TorchScript file stays as loaded.
// What moving to another device does is measured where there is one (tests/audit/test_device.cpp).
// Where CUDA is not available (a CPU build of LibTorch, or no GPU visible), --device cuda is one
// line and exit 2 before any model is read, for every kind of target; where it is, a format whose
// interpreter runs on the CPU only says so in one line.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

const std::string kRepo = GRASSAUDIT_SOURCE_DIR;

// The audit's JSON without what it spent (seconds and forwards depend on the machine's load).
nlohmann::json facts(const std::string& path) {
  auto j = nlohmann::json::parse(read_text(path));
  for (const char* cost : {"seconds", "seconds_by_check", "forwards"}) j.erase(cost);
  return j;
}

TEST(CliDevice, DeviceCpuIsTheAuditOfNoFlag) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::vector<std::vector<std::string>> audits = {
      // a built-in model, leaky (its float64 re-runs and gradient check run through the plumbing)
      {"audit", "--mixer", "future", "--d-model", "16", "--layers", "1", "--heads", "2", "--rank", "4",
       "--vocab-size", "64", "--max-len", "12", "--offsets", "2", "--trials", "1"},
      // a TorchScript file, causal, both modes
      {"audit", "--model", kRepo + "/audits/controls/causal_attention.pt", "--input", "tokens:64", "--seq-len", "12",
       "--trials", "1"},
  };
  for (size_t i = 0; i < audits.size(); ++i) {
    SCOPED_TRACE(audits[i][2]);
    auto plain = audits[i], on_cpu = audits[i];
    const std::string a = t.file("plain" + std::to_string(i) + ".json"), b = t.file("cpu" + std::to_string(i) + ".json");
    plain.insert(plain.end(), {"--json", a});
    on_cpu.insert(on_cpu.end(), {"--device", "cpu", "--json", b});
    const auto ra = cli.run(plain, 300), rb = cli.run(on_cpu, 300);
    ASSERT_EQ(ra.status, i == 0 ? 1 : 0) << show(ra);
    ASSERT_EQ(rb.status, ra.status) << show(rb);
    const auto ja = facts(a), jb = facts(b);
    EXPECT_EQ(jb.value("device", ""), "cpu");
    EXPECT_EQ(ja, jb) << "--device cpu changed the audit";
  }
}

TEST(CliDevice, CudaWithoutCudaIsOneLineBeforeAnyModelIsRead) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  if (torch::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  TempDir t;
  Cli cli(t);
  const std::vector<std::vector<std::string>> targets = {
      {"--mixer", "past"},
      {"--model", kRepo + "/audits/controls/causal_attention.pt", "--input", "tokens:64", "--seq-len", "8"},
      {"--model", kRepo + "/tests/fixtures/onnx/attention_triu.onnx", "--input", "ids=tokens:50", "--seq-len", "8"},
      {"--suite", kRepo + "/audits/controls.json"},
      // no model read at all: the device is refused first
      {"--model", t.file("missing.pt"), "--input", "tokens:64", "--seq-len", "8"},
  };
  for (const auto& target : targets) {
    for (const std::string device : {"cuda", "cuda:1"}) {
      std::vector<std::string> args{"audit", "--device", device};
      args.insert(args.end(), target.begin(), target.end());
      SCOPED_TRACE(target[1] + " --device " + device);
      const auto r = cli.run(args);
      EXPECT_TRUE(IsOneLineError(r, "audit", {"--device " + device, "CUDA is not available", "--device cpu"}));
    }
  }
}

TEST(CliDevice, AnUnknownDeviceIsOneLine) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  for (const std::string device : {"tpu", "cuda:x", "gpu", ""}) {
    SCOPED_TRACE(device);
    const auto r = cli.run({"audit", "--mixer", "past", "--device", device});
    EXPECT_TRUE(IsOneLineError(r, "audit", {"--device must be cpu, cuda or cuda:N"}));
  }
}

TEST(CliDevice, AFormatThatRunsOnTheCpuOnlySaysSoOnCuda) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a GPU: without one, --device cuda is refused earlier";
  TempDir t;
  Cli cli(t);
  const auto r = cli.run({"audit", "--device", "cuda", "--model", kRepo + "/tests/fixtures/onnx/attention_triu.onnx",
                          "--input", "ids=tokens:50", "--seq-len", "8"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"--device cuda", "runs on the CPU only"}, /*only_line=*/false));
}

}  // namespace
}  // namespace grassaudit::clitest
