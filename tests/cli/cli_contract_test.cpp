// The audit's contracts from the command line (issue: length and batch leaks, declared
// lookahead and window, property search, third-party exports): exit 0 when every property holds
// within the declared contract, 1 on a violation (named in the JSON), 2 on bad flags or models;
// the README snippets (README.md "Audit your own model", audits/README.md), run with Debian's
// python3-torch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

std::string control(const std::string& name) { return std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/controls/" + name; }

std::vector<std::string> audit_args(const std::string& model, const std::string& input, const std::string& json,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> a{"audit", "--model", model, "--input", input, "--seq-len", "16", "--trials", "2",
                             "--threads", "1", "--json", json};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> violation_kinds(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& v : j.at("violations")) out.push_back(v.at("kind").get<std::string>());
  return out;
}

TEST(CliContract, DeclaredLookaheadHoldsAndOneLessIsAViolation) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto ok = cli.run(audit_args(control("right_context_conv.pt"), "features:4", t.file("ok.json"),
                               {"--allow-lookahead", "2"}));
  ASSERT_EQ(ok.status, 0) << show(ok);
  auto j = nlohmann::json::parse(read_text(t.file("ok.json")));
  EXPECT_EQ(j["leak_horizon"], 2);
  EXPECT_EQ(j["contract"]["lookahead"], 2);
  EXPECT_TRUE(j["contract_holds"].get<bool>());
  EXPECT_EQ(j["past_horizon"], 1);

  auto over = cli.run(audit_args(control("right_context_conv.pt"), "features:4", t.file("over.json"),
                                 {"--allow-lookahead", "1"}));
  ASSERT_EQ(over.status, 1) << show(over);
  auto o = nlohmann::json::parse(read_text(t.file("over.json")));
  EXPECT_EQ(violation_kinds(o), std::vector<std::string>{"future"});
  EXPECT_EQ(o["violations"][0]["horizon"], 2);
  EXPECT_EQ(o["violations"][0]["allowed"], 1);
}

TEST(CliContract, WindowWithinAndOver) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto ok = cli.run(audit_args(control("sliding_window_attention.pt"), "features:4", t.file("ok.json"), {"--window", "4"}));
  ASSERT_EQ(ok.status, 0) << show(ok);
  auto over = cli.run(audit_args(control("sliding_window_attention.pt"), "features:4", t.file("o.json"), {"--window", "3"}));
  ASSERT_EQ(over.status, 1) << show(over);
  auto o = nlohmann::json::parse(read_text(t.file("o.json")));
  EXPECT_EQ(violation_kinds(o), std::vector<std::string>{"window"});
  EXPECT_EQ(o["past_horizon"], 3);
  EXPECT_EQ(o["leak_horizon"], 0);
}

TEST(CliContract, BatchMixingIsNamedBatchWithTimeHorizonZero) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  for (const char* model : {"batch_mean_centering.pt", "train_batch_statistics.pt"}) {
    auto r = cli.run(audit_args(control(model), "features:4", t.file("b.json")));
    ASSERT_EQ(r.status, 1) << model << show(r);
    auto j = nlohmann::json::parse(read_text(t.file("b.json")));
    EXPECT_EQ(violation_kinds(j), std::vector<std::string>{"batch"}) << model;
    EXPECT_EQ(j["leak_horizon"], 0) << model;
    EXPECT_TRUE(j["batch_coupled"].get<bool>()) << model;
    EXPECT_FALSE(j["batch_evidence"]["text"].get<std::string>().empty());
  }
}

TEST(CliContract, LengthReadingIsLengthDependent) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run(audit_args(control("length_normalised_position.pt"), "features:4", t.file("l.json")));
  ASSERT_EQ(r.status, 1) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("l.json")));
  EXPECT_EQ(violation_kinds(j), std::vector<std::string>{"length"});
  EXPECT_TRUE(j["length_dependent"].get<bool>());
  EXPECT_EQ(j["length_evidence"]["seq_len"], 16);
  auto twin = cli.run(audit_args(control("max_len_normalised_position.pt"), "features:4", t.file("m.json")));
  EXPECT_EQ(twin.status, 0) << show(twin);
}

TEST(CliContract, PropertySearchShrinksToTheSmallestCase) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  // Symmetric padding: y_t reads x_{t+1}; the smallest failing case is L = 2, cut 1, position 0.
  auto r = cli.run(audit_args(control("conv_symmetric_padding.pt"), "tokens:64", t.file("p.json"),
                              {"--property", "60"}));
  ASSERT_EQ(r.status, 1) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("p.json")));
  const auto& c = j.at("counterexample");
  EXPECT_EQ(c["kind"], "future");
  EXPECT_EQ(c["seq_len"], 2);
  EXPECT_EQ(c["cut"], 1);
  EXPECT_EQ(c["positions"], nlohmann::json::array({0}));
  EXPECT_GT(c["effect"].get<double>(), 1e-3);
  EXPECT_NE(r.out.find("property search (minimal case): L=2, cut 1"), std::string::npos) << r.out;
  // The causal twin passes every drawn case.
  auto ok = cli.run(audit_args(control("conv_left_padding.pt"), "tokens:64", t.file("q.json"), {"--property", "60"}));
  ASSERT_EQ(ok.status, 0) << show(ok);
  EXPECT_TRUE(nlohmann::json::parse(read_text(t.file("q.json")))["counterexample"].is_null());
}

TEST(CliContract, PropertySearchFindsALengthLeak) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run(audit_args(control("length_normalised_position.pt"), "features:4", t.file("p.json"),
                              {"--property", "60"}));
  ASSERT_EQ(r.status, 1) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("p.json")));
  EXPECT_EQ(j["counterexample"]["kind"], "length");
  EXPECT_EQ(j["counterexample"]["seq_len"], 3);  // the smallest: a prefix of 2 of a length-3 sequence
  EXPECT_EQ(j["counterexample"]["cut"], 2);
  EXPECT_EQ(violation_kinds(j), std::vector<std::string>{"length"});
}

TEST(CliContract, BadContractFlagsAreOneLineErrors) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--allow-lookahead=-1"}, "--allow-lookahead"},
      {{"--window", "0"}, "--window"},
      {{"--window=-3"}, "--window"},
      {{"--property", "0"}, "--property"},
      {{"--allow-lookahead", "x"}, "allow-lookahead"},
  };
  for (const auto& [extra, needle] : cases) {
    auto r = cli.run(audit_args(control("conv_left_padding.pt"), "tokens:64", t.file("x.json"), extra));
    EXPECT_TRUE(IsOneLineError(r, "audit", {needle})) << needle;
    EXPECT_FALSE(fs::exists(t.file("x.json")));
  }
}

// A traced float32 constant breaks the plain float64 forward; the decision is still float64, on a
// copy with the graph's float32 constants promoted, and the note says so (it used to fall back to
// float32 and its fixed 1e-4 threshold).
TEST(CliContract, TracedFloat32ConstantsArePromotedForFloat64WithANote) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run(audit_args(fixture("traced_f32_constant.pt"), "features:4", t.file("f.json")));
  ASSERT_EQ(r.status, 0) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("f.json")));
  EXPECT_EQ(j["precision"], "float64");
  bool noted = false;
  for (const auto& n : j["notes"]) {
    const std::string text = n.get<std::string>();
    noted = noted || (text.find("float32 constants promoted to float64") != std::string::npos &&
                      text.find("the plain float64 forward failed") != std::string::npos);
  }
  EXPECT_TRUE(noted) << j["notes"].dump();
}

TEST(CliContract, TracedFixedLengthNamesTheLength) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto args = audit_args(fixture("traced_fixed_length.pt"), "features:4", t.file("x.json"));
  args[6] = "32";  // --seq-len 32; traced at 16
  auto r = cli.run(args);
  EXPECT_TRUE(IsOneLineError(r, "audit", {"traced_fixed_length.pt", "at L=32", "torch.jit.trace"}));
  // At its traced length it audits; the prefix lengths it cannot run are skipped with a note.
  auto ok = cli.run(audit_args(fixture("traced_fixed_length.pt"), "features:4", t.file("ok.json"), {"--seq-lens", "16"}));
  ASSERT_EQ(ok.status, 0) << show(ok);
  auto j = nlohmann::json::parse(read_text(t.file("ok.json")));
  EXPECT_TRUE(j["length_dependent"].is_null());
  EXPECT_NE(j["notes"].dump().find("does not run at prefix length"), std::string::npos) << j["notes"].dump();
}

// The python code between <!-- MARKER:begin --> and <!-- MARKER:end --> in the README at `file`
// (relative to the source tree; "" if none).
std::string readme_python_block(const std::string& file, const std::string& marker) {
  const std::string readme = read_text(std::string(GRASSAUDIT_SOURCE_DIR) + "/" + file);
  const std::string begin = "<!-- " + marker + ":begin -->", end = "<!-- " + marker + ":end -->";
  const auto b = readme.find(begin), e = readme.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  const std::string block = readme.substr(b + begin.size(), e - b - begin.size());
  const auto code_start = block.find("```python\n"), code_end = block.rfind("```");
  if (code_start == std::string::npos || code_end <= code_start) return "";
  return block.substr(code_start + 10, code_end - code_start - 10);
}

// Runs `code` as snippet.py in t with Debian's python3-torch, one thread: its exit status (0 on
// success); its output is in py.log.
int run_python_snippet(const TempDir& t, const std::string& code) {
  write_text(t.file("snippet.py"), code);
  const std::string cmd = "cd '" + t.path() + "' && OMP_NUM_THREADS=1 /usr/bin/python3 snippet.py > py.log 2>&1";
  return std::system(cmd.c_str());
}

// audits/README.md's TorchScript export snippet, run with Debian's python3-torch, then audited as it says.
TEST(CliContract, ReadmeSnippetExportsModelsTheAuditAccepts) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string block = readme_python_block("audits/README.md", "readme-audit-snippet");
  ASSERT_FALSE(block.empty()) << "no readme-audit-snippet python block in audits/README.md";
  ASSERT_EQ(run_python_snippet(t, block), 0) << read_text(t.file("py.log"));
  for (const char* model : {"my_model.pt", "my_model_traced.pt"}) {
    auto r = cli.run({"audit", "--model", t.file(model), "--input", "tokens:100", "--seq-len", "64", "--trials", "1",
                      "--threads", "1", "--property", "20", "--json", t.file("a.json")});
    ASSERT_EQ(r.status, 0) << model << show(r);
    auto j = nlohmann::json::parse(read_text(t.file("a.json")));
    EXPECT_TRUE(j["contract_holds"].get<bool>());
    EXPECT_FALSE(j["vacuous"].get<bool>());
  }
}

// The top README's torch.export snippet, run where /usr/bin/python3 has torch.export (PyTorch
// 2.x: the Debian 13 root), then audited as it says: a .pt2 read by its content.
TEST(CliContract, ReadmeExportSnippetIsAudited) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  if (std::system("/usr/bin/python3 -c 'import torch.export' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 has no torch.export (PyTorch 1.13): the 2.6 build runs this";
  TempDir t;
  Cli cli(t);
  const std::string block = readme_python_block("README.md", "readme-export-snippet");
  ASSERT_FALSE(block.empty()) << "no readme-export-snippet python block in README.md";
  ASSERT_EQ(run_python_snippet(t, block), 0) << read_text(t.file("py.log"));
  auto r = cli.run({"audit", "--model", t.file("my_model.pt2"), "--input", "tokens:100", "--seq-len", "64", "--trials",
                    "1", "--threads", "1", "--json", t.file("a.json")});
  ASSERT_EQ(r.status, 0) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("a.json")));
  EXPECT_EQ(j["format"], "torch.export");
  EXPECT_TRUE(j["contract_holds"].get<bool>());
  EXPECT_FALSE(j["vacuous"].get<bool>());
}

// audits/README.md's Hugging Face-style snippet (two inputs, a dict output), exported and audited
// with the flags it gives.
TEST(CliContract, ReadmeHuggingFaceSnippetIsAuditedLeafByLeaf) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string block = readme_python_block("audits/README.md", "readme-hf-snippet");
  ASSERT_FALSE(block.empty()) << "no readme-hf-snippet python block in audits/README.md";
  ASSERT_EQ(run_python_snippet(t, block), 0) << read_text(t.file("py.log"));
  auto r = cli.run({"audit", "--model", t.file("tiny_decoder.pt"), "--input", "input_ids=tokens:100", "--input",
                    "attention_mask=ones", "--seq-len", "32", "--trials", "1", "--threads", "1", "--json",
                    t.file("a.json")});
  ASSERT_EQ(r.status, 0) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("a.json")));
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["path"], "[\"logits\"]");
  EXPECT_EQ(j["outputs"][1]["path"], "[\"last_hidden_state\"]");
  for (const auto& o : j["outputs"]) EXPECT_EQ(o["verdict"], "causal") << o.dump();
  r = cli.run({"audit", "--model", t.file("tiny_decoder.pt"), "--input", "tokens:100", "--input", "ones", "--seq-len",
               "32", "--trials", "1", "--threads", "1", "--output", "[\"logits\"]", "--json", t.file("b.json")});
  ASSERT_EQ(r.status, 0) << show(r);
  // One input where forward takes two: one line listing the arguments.
  r = cli.run({"audit", "--model", t.file("tiny_decoder.pt"), "--input", "tokens:100", "--seq-len", "32"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"attention_mask", "forward(self, input_ids: Tensor, attention_mask: Tensor)"}));
}

// audits/README.md's KV-cache decoder: its incremental path is consistent with forward; the same
// file with the position offset never advanced (offset = 0) is caught as an incremental violation.
TEST(CliContract, ReadmeIncrementalSnippetIsConsistentAndItsOffsetBugIsCaught) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string block = readme_python_block("audits/README.md", "readme-incremental-snippet");
  ASSERT_FALSE(block.empty()) << "no readme-incremental-snippet python block in audits/README.md";
  const std::string correct_line = "offset = state[0].size(1)";
  ASSERT_NE(block.find(correct_line), std::string::npos);
  std::string buggy = block;
  buggy.replace(buggy.find(correct_line), correct_line.size(), "offset = 0");
  buggy.replace(buggy.find("\"cached_decoder.pt\""), 19, "\"offset_bug.pt\"");
  ASSERT_EQ(run_python_snippet(t, block + "\n" + buggy), 0) << read_text(t.file("py.log"));
  auto r = cli.run({"audit", "--model", t.file("cached_decoder.pt"), "--input", "tokens:100", "--seq-len", "32",
                    "--trials", "1", "--threads", "1", "--incremental", "--json", t.file("a.json")});
  ASSERT_EQ(r.status, 0) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("a.json")));
  EXPECT_TRUE(j["incremental"]["holds"].get<bool>()) << j["incremental"].dump();
  r = cli.run({"audit", "--model", t.file("offset_bug.pt"), "--input", "tokens:100", "--seq-len", "32", "--trials",
               "1", "--threads", "1", "--incremental", "--json", t.file("b.json")});
  EXPECT_EQ(r.status, 1) << show(r);
  j = nlohmann::json::parse(read_text(t.file("b.json")));
  EXPECT_FALSE(j["incremental"]["consistent"].get<bool>());
  ASSERT_EQ(j["violations"].size(), 1u);
  EXPECT_EQ(j["violations"][0]["kind"], "incremental");
}

}  // namespace
}  // namespace grassaudit::clitest
