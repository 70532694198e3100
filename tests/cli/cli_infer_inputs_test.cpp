// `grassaudit audit --model FILE` without --input: the inputs read from the file (ONNX,
// torch.export, TorchScript), said in the summary ("inputs inferred: ...") and the JSON
// (inputs_inferred), and the audit the same as with those inputs given: verdict, horizons,
// violations, outputs. A file that does not say enough is one line naming each input and what to
// pass, exit 2, nothing written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

std::string src(const std::string& rel) { return std::string(GRASSAUDIT_SOURCE_DIR) + "/" + rel; }

std::vector<std::string> audit_args(const std::string& model, const std::string& json,
                                    const std::vector<std::string>& inputs) {
  std::vector<std::string> a{"audit", "--model", model, "--seq-len", "8", "--trials", "1", "--mode", "eval",
                             "--threads", "1", "--json", json};
  for (const auto& i : inputs) {
    a.push_back("--input");
    a.push_back(i);
  }
  return a;
}

struct Case {
  std::string model;                // under the source tree
  std::vector<std::string> inputs;  // what inference must find, as --input values
  std::string verdict;
};

TEST(CliInferInputs, TheSameAuditAsWithTheInputsGiven) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  const std::vector<Case> cases{
      {"tests/fixtures/onnx/conv_same.onnx", {"ids=tokens:50"}, "leaky"},
      {"tests/fixtures/onnx/attention_where.onnx", {"x=features:4"}, "causal"},
      {"audits/export/conv_same.pt2", {"ids=tokens:64"}, "leaky"},
      {"audits/export/two_inputs_dict.pt2", {"ids=tokens:64", "attention_mask=ones"}, "causal"},
      {"audits/controls/conv_symmetric_padding.pt", {"ids=tokens:64"}, "leaky"},
      {"tests/cli/fixtures/wrong_channels.pt", {"x=features:8"}, "causal"},
  };
  TempDir t;
  Cli cli(t);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    const auto inferred = cli.run(audit_args(src(c.model), t.file("inferred.json"), {}), 120);
    ASSERT_TRUE(inferred.status == 0 || inferred.status == 1) << show(inferred);
    const auto given = cli.run(audit_args(src(c.model), t.file("given.json"), c.inputs), 120);
    ASSERT_EQ(given.status, inferred.status) << show(given);

    std::string line = "  inputs inferred: ";
    nlohmann::json want = nlohmann::json::object();
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      line += (i ? ", " : "") + c.inputs[i];
      const auto eq = c.inputs[i].find('=');
      want[c.inputs[i].substr(0, eq)] = c.inputs[i].substr(eq + 1);
    }
    EXPECT_NE(inferred.out.find(line + "\n"), std::string::npos) << inferred.out;
    EXPECT_EQ(given.out.find("inputs inferred"), std::string::npos) << given.out;

    const auto a = nlohmann::json::parse(read_text(t.file("inferred.json")));
    const auto b = nlohmann::json::parse(read_text(t.file("given.json")));
    EXPECT_EQ(a["inputs_inferred"], want);
    EXPECT_FALSE(b.contains("inputs_inferred"));
    EXPECT_EQ(a["verdict"], c.verdict);
    for (const char* key : {"verdict", "leak_horizon", "past_horizon", "violations", "outputs", "target", "format",
                            "probes", "weights_sha256", "length_dependent", "batch_coupled", "contract_holds"})
      EXPECT_EQ(a.value(key, nlohmann::json()), b.value(key, nlohmann::json())) << key;
  }
}

TEST(CliInferInputs, AFileThatDoesNotSayEnoughIsOneLine) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string ok = fixture("ok_causal.pt");  // a cumulative mean: nothing fixes C
  auto r = cli.run(audit_args(ok, t.file("r.json"), {}));
  EXPECT_TRUE(IsOneLineError(r, "audit",
                             {ok + ": cannot infer the inputs: x (Tensor; dtype and shape not declared: pass --input "
                                   "x=tokens:V or x=features:C); pass one --input per input"}));
  EXPECT_FALSE(fs::exists(t.file("r.json")));
  // A streaming step: the state bound by --state, a sample rate the file cannot say.
  const std::string sr = src("tests/fixtures/onnx/stream_gru_sr.onnx");
  r = cli.run({"audit", "--model", sr, "--state", "state=state_out", "--seq-len", "16", "--json", t.file("r.json")});
  EXPECT_TRUE(IsOneLineError(r, "audit",
                             {sr + ": cannot infer the inputs: x (float32 [?, 4, 4]: features:4), sr (int64 []: pass "
                                   "--input sr=const:VALUE); pass one --input per input"}));
  EXPECT_FALSE(fs::exists(t.file("r.json")));
  // Not a model at all: the opener's line, as with --input.
  const std::string junk = t.file("junk.pt");
  write_text(junk, "not a model");
  r = cli.run({"audit", "--model", junk, "--seq-len", "8"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"junk.pt"}));
  EXPECT_EQ(r.err.find("cannot infer"), std::string::npos) << r.err;
  EXPECT_TRUE(NoTempFiles(t.path()));
}

}  // namespace
}  // namespace grassaudit::clitest
