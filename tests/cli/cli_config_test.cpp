// Invalid configuration across audit / train / eval / bench / report: non-positive sizes,
// offsets >= L, r < 2, d not divisible by heads, unknown mixer or preset, unknown flags, stray
// words, conflicting flags. Each: exit 2, one line "grassaudit <cmd>: error: ..." naming the flag
// or field, nothing written.
#include <gtest/gtest.h>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

struct Case {
  std::vector<std::string> args;
  std::vector<std::string> needles;
};

// A small built-in model, so a case that is wrongly accepted finishes fast instead of hanging.
const std::vector<std::string> kSmall{"--d-model", "8", "--rank", "2", "--layers", "1", "--max-len", "8",
                                      "--offsets", "1", "--heads", "2", "--d-ff", "8", "--trials", "1"};

void expect_all(const std::string& cmd, const std::vector<Case>& cases, bool only_line = true) {
  TempDir t;
  Cli cli(t);
  for (const auto& c : cases) {
    std::vector<std::string> args{cmd};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    SCOPED_TRACE(shown);
    auto r = cli.run(args, 30);
    EXPECT_TRUE(IsOneLineError(r, cmd, c.needles, only_line));
  }
  // Whatever a case named as output (--json, --out under the temp folder), nothing appeared.
  for (const auto& f : list_files(t.path()))
    EXPECT_TRUE(f.rfind("io-", 0) == 0 || f.rfind("cache", 0) == 0) << "left behind: " << f;
}

// --mixer past plus kSmall, with `extra` flag/value pairs replacing or adding to them.
std::vector<std::string> small(std::vector<std::string> extra) {
  std::vector<std::string> a{"--mixer", "past"};
  a.insert(a.end(), kSmall.begin(), kSmall.end());
  for (size_t i = 0; i + 1 < extra.size(); i += 2) {
    bool replaced = false;
    for (size_t k = 0; k + 1 < a.size(); k += 2)
      if (a[k] == extra[i]) {
        a[k + 1] = extra[i + 1];
        replaced = true;
      }
    if (!replaced) a.insert(a.end(), {extra[i], extra[i + 1]});
  }
  return a;
}

TEST(CliConfig, AuditBuiltinModelValues) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  expect_all("audit", {
      {small({"--seq-len", "1"}), {"--seq-len", ">= 2", "1"}},
      {small({"--seq-len", "-3"}), {"--seq-len", "-3"}},
      {small({"--seq-len", "9"}), {"--seq-len 9", "max_len 8"}},
      {small({"--batch", "0"}), {"--batch", "0"}},
      {small({"--trials", "0"}), {"--trials", "0"}},
      {small({"--mode", "sideways"}), {"--mode", "sideways"}},
      {small({"--output", "probs"}), {"probs"}},
      {small({"--seq-lens", "8,1"}), {"--seq-lens", "1"}},
      {small({"--seq-lens", "8,x"}), {"--seq-lens", "8,x"}},
      {small({"--rank", "1"}), {"rank", ">= 2", "got 1"}},
      {small({"--d-model", "0"}), {"d_model", "got 0"}},
      {small({"--d-model", "-8"}), {"d_model", "got -8"}},
      {small({"--layers", "0"}), {"layers", "got 0"}},
      {small({"--max-len", "0"}), {"max_len", "got 0"}},
      {small({"--vocab-size", "0"}), {"vocab_size", "got 0"}},
      {small({"--d-ff", "0"}), {"d_ff", "got 0"}},
      {small({"--dropout", "1.5"}), {"dropout", "1.5"}},
      {small({"--dropout", "nan"}), {"dropout", "nan"}},
      {small({"--eps", "-1"}), {"eps", "got -1"}},
      {small({"--offsets", "8"}), {"offset 8 >= max_len 8"}},
      {small({"--offsets", "0"}), {"offsets", ">= 1", "got 0"}},
      {small({"--offsets", "a,b"}), {"--offsets", "a,b"}},
      {small({"--offsets", ""}), {"--offsets", "empty"}},
      {small({"--offsets", "1,2"}), {"per-layer", "2 offsets for 1 layers"}},
      {small({"--offsets", "99999999999999999999"}), {"--offsets", "99999999999999999999"}},
      {small({"--offset-mode", "some"}), {"offset_mode", "some"}},
      {{"--mixer", "attention", "--d-model", "16", "--heads", "3"}, {"d_model (16)", "heads (3)"}},
      {{"--mixer", "attention", "--heads", "0"}, {"heads", "got 0"}},
      {{"--mixer", "nope"}, {"unknown mixer 'nope'", "past"}},
      {{"--mixer", ""}, {"unknown mixer ''"}},
      {small({"--threads", "x"}), {"--threads"}},
      {small({"--seed", "x"}), {"--seed"}},
      {small({"--rank", "2.5"}), {"--rank"}},
  });
}

TEST(CliConfig, AuditSourcesAndFlags) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  const std::string ok = fixture("ok_causal.pt");
  expect_all("audit", {
      {{}, {"exactly one of --model, --mixer/--checkpoint, --suite"}},
      {{"--model", ok, "--mixer", "past"}, {"exactly one of"}},
      {{"--model", ok, "--checkpoint", "x.ckpt"}, {"exactly one of"}},
      {{"--suite", "audits/controls.json", "--mixer", "past"}, {"exactly one of"}},
      // Without --input the file's inputs are read; a cumulative mean says nothing of them.
      {{"--model", ok, "--seq-len", "8"}, {"cannot infer the inputs: x (", "pass --input x="}},
      {{"--model", ok, "--input", "features:4"}, {"--model needs --seq-len"}},
      {{"--model", ok, "--input", "features:0", "--seq-len", "8"}, {"--input", "'0'"}},
      {{"--model", ok, "--input", "tokens:", "--seq-len", "8"}, {"--input"}},
      {{"--model", ok, "--input", "pixels:4", "--seq-len", "8"}, {"--input", "pixels:4"}},
      {{"--model", ok, "--input", "features:4", "--seq-len", "1"}, {"--seq-len", "1"}},
      {{"--model", ok, "--input", "features:4", "--seq-len", "8", "--feature-scale", "0"}, {"--feature-scale"}},
      {{"--model", ok, "--input", "features:4", "--seq-len", "8", "--feature-scale", "nan"}, {"--feature-scale"}},
      {{"--model", ok, "--input", "features:4", "--seq-len", "8", "--seq-lens", "9"}, {"--seq-lens", "9"}},
      {{"--mixer", "past", "--input", "tokens:8"}, {"--input is for --model"}},
      {{"--bogus"}, {"'--bogus'"}},
      {{"--mixer", "past", "stray"}, {"positional"}},
      {{"--mixer", "past", "--mixer", "future"}, {"--mixer", "more than once"}},
      {{"--mixer"}, {"--mixer"}},
      {{"--suite", "missing.json"}, {"missing.json"}},
  });
}

TEST(CliConfig, TrainValues) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  const std::string out = t.file("run");
  auto tiny = [&](std::vector<std::string> extra) {
    std::vector<std::string> a{"--mixer", "past", "--preset", "tiny", "--out", out, "--data-dir", t.file("none")};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  write_text(t.file("c.json"), R"({"model": {"d_model": 16}})");
  expect_all("train", {
      {{"--mixer", "past"}, {"--preset NAME or --config FILE"}},
      {{"--mixer", "past", "--preset", "tiny", "--config", t.file("c.json")}, {"exactly one of --preset"}},
      {{"--mixer", "past", "--preset", "nope"}, {"unknown preset 'nope'", "tiny"}},
      {{"--preset", "tiny"}, {"--mixer is required"}},
      {tiny({"--mixer", "x"}), {"--mixer", "more than once"}},
      {{"--mixer", "nope", "--preset", "tiny"}, {"unknown mixer 'nope'"}},
      {tiny({"--rank", "1"}), {"rank", "got 1"}},
      {tiny({"--d-model", "0"}), {"d_model", "got 0"}},
      {tiny({"--layers", "-1"}), {"layers", "got -1"}},
      {tiny({"--max-len", "1"}), {"max_len", "got 1"}},
      {tiny({"--offsets", "1,16"}), {"offset 16 >= max_len 16"}},
      {{"--mixer", "attention", "--preset", "tiny", "--heads", "3"}, {"d_model (16)", "heads (3)"}},
      {tiny({"--vocab-size", "1"}), {"vocab_size", "got 1"}},
      {tiny({"--dropout", "1"}), {"dropout"}},
      {tiny({"--epochs", "0"}), {"epochs", "got 0"}},
      {tiny({"--max-tokens", "-1"}), {"max_tokens", "got -1"}},
      {tiny({"--audit-trials", "0"}), {"audit_trials", "got 0"}},
      {tiny({"--tokenizer", "bpe"}), {"tokenizer", "bpe"}},
      {tiny({"--device", "tpu"}), {"--device", "tpu"}},
      {{"--mixer", "past", "--preset", "tiny", "--out", ""}, {"--out must not be empty"}},
      {tiny({"--bogus"}), {"'--bogus'"}},
      {tiny({"stray"}), {"positional"}},
      {{"--resume", t.file("x.ckpt"), "--preset", "tiny"}, {"--preset cannot be combined with --resume"}},
      {{"--resume", t.file("x.ckpt"), "--mixer", "past"}, {"--mixer cannot be combined with --resume"}},
      {{"--resume", t.file("x.ckpt"), "--d-model", "8"}, {"--d-model cannot be combined with --resume"}},
      {{"--resume", t.file("x.ckpt")}, {"x.ckpt", "No such file"}},
  });
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliConfig, EvalValues) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  expect_all("eval", {
      {{"--split", "valid"}, {"--checkpoint"}},
      {{"--checkpoint", "x.ckpt"}, {"--split"}},
      {{"--checkpoint", "x.ckpt", "--split", "train"}, {"--split", "'train'"}},
      {{"--checkpoint", "x.ckpt", "--split", "valid", "--bogus"}, {"'--bogus'"}},
      {{"--checkpoint", "x.ckpt", "--split", "valid", "--threads", "x"}, {"--threads"}},
      {{"--checkpoint", "a", "--checkpoint", "b", "--split", "test"}, {"--checkpoint", "more than once"}},
      {{"--checkpoint", "x.ckpt", "--split", "valid", "extra"}, {"positional"}},
      {{"--checkpoint", "x.ckpt", "--split", "valid", "--mixer", "past"}, {"'--mixer'"}},
  });
}

TEST(CliConfig, BenchValues) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  // bench prints its runtime banner before checking values: the error is the last line.
  expect_all("bench", {
      {{"--mixer", "nope"}, {"unknown mixer 'nope'"}},
      {{"--mixer", "past", "--batch", "0"}, {"--batch", "got 0"}},
      {{"--mixer", "past", "--seq-len", "1"}, {"--seq-len", "got 1"}},
      {{"--mixer", "past", "--seq-len", "8,x"}, {"--seq-len", "8,x"}},
      {{"--mixer", "past", "--rank", "1"}, {"rank", "got 1"}},
      {{"--mixer", "past", "--d-model", "0"}, {"d_model", "got 0"}},
      {{"--mixer", "attention", "--d-model", "16", "--heads", "3"}, {"d_model (16)", "heads (3)"}},
      {{"--mixer", "past", "--offsets", "1,200", "--seq-len", "128"}, {"offset 200 >= max_len 128"}},
      {{"--mixer", "past", "--reps", "0"}, {"--reps", "got 0"}},
      {{"--mixer", "past", "--warmup", "-1"}, {"--warmup", "got -1"}},
      {{"--mixer", "past", "--tokens", "0", "--seq-len", "8"}, {"--tokens", "got 0"}},
      {{"--mixer", "past", "--tokens", "8", "--batch", "2", "--seq-len", "8"}, {"--batch or --tokens"}},
      {{"--model", "nope", "--mixer", "past"}, {"unknown preset 'nope'"}},
  }, /*only_line=*/false);
  expect_all("bench", {
      {{"--bogus"}, {"'--bogus'"}},
      {{"--mixer", "past", "stray"}, {"positional"}},
  });
}

TEST(CliConfig, ReportAndTopLevel) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  expect_all("report", {
      {{"--bogus"}, {"'--bogus'"}},
      {{"stray"}, {"positional"}},
      {{"--out"}, {"--out"}},
  });
  Cli cli(t);
  auto r = cli.run({"nope"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("unknown command 'nope'"), std::string::npos) << r.err;
  r = cli.run({});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("usage:"), std::string::npos) << r.err;
  r = cli.run({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* cmd : {"audit", "train", "eval", "bench", "report", "mixers"}) {
    r = cli.run({cmd, "--help"});
    EXPECT_EQ(r.status, 0) << cmd << "\n" << show(r);
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << cmd;
  }
}

// Values boost::program_options or a plain "> 0" check would let through:
//   --seed -1     parsed into a uint64_t as 18446744073709551615
//   --threads -1  would have meant "all cores" like 0
//   --eps inf     passes "> 0"; the Pluecker normalisation then divides by inf
TEST(CliConfig, RejectsWrappedSeedsNegativeThreadsAndInfinities) {
  expect_all("audit", {
      {small({"--seed", "-1"}), {"--seed", "-1"}},
      {small({"--seed", "1e3"}), {"--seed", "1e3"}},
      {small({"--seed", "99999999999999999999"}), {"--seed"}},
      {small({"--threads", "-1"}), {"--threads", ">= 0", "-1"}},
      {small({"--eps", "inf"}), {"eps", "finite", "inf"}},
      {small({"--eps", "nan"}), {"eps", "nan"}},
      {small({"--dropout", "nan"}), {"dropout", "nan"}},
  });
  expect_all("train", {
      {{"--mixer", "past", "--preset", "tiny", "--seed", "-5"}, {"--seed", "-5"}},
      {{"--mixer", "past", "--preset", "tiny", "--threads", "-2"}, {"--threads", "-2"}},
  });
  expect_all("train-nli", {{{"--seed", "-1"}, {"--seed", "-1"}}});
}

}  // namespace
}  // namespace grassaudit::clitest

namespace grassaudit::clitest {
namespace {

// Compute commands run with OMP_WAIT_POLICY=PASSIVE (they re-execute themselves once to set it
// before libgomp reads it), and in that exec with OpenBLAS's idle workers sleeping at once
// (OPENBLAS_THREAD_TIMEOUT=4); a user's own OMP_WAIT_POLICY, GOMP_SPINCOUNT or
// OPENBLAS_THREAD_TIMEOUT is kept. The banner says which settings are in force.
TEST(CliRuntime, OpenMpWaitPolicyIsPassiveUnlessTheUserChose) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::vector<std::string> bench{"bench", "--model", "tiny", "--mixer", "past", "--reps", "1", "--warmup",
                                       "0", "--threads", "1"};
  auto r = cli.run(bench, 60, {{"OMP_WAIT_POLICY", ""}, {"GOMP_SPINCOUNT", ""}, {"OPENBLAS_THREAD_TIMEOUT", ""}});
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_NE(r.err.find("OMP_WAIT_POLICY=PASSIVE"), std::string::npos) << show(r);
  EXPECT_NE(r.err.find("OPENBLAS_THREAD_TIMEOUT=4\n"), std::string::npos) << show(r);
  r = cli.run(bench, 60, {{"OMP_WAIT_POLICY", ""}, {"GOMP_SPINCOUNT", ""}, {"OPENBLAS_THREAD_TIMEOUT", "20"}});
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_NE(r.err.find("OPENBLAS_THREAD_TIMEOUT=20\n"), std::string::npos) << show(r);
  r = cli.run(bench, 60, {{"OMP_WAIT_POLICY", "active"}});
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_NE(r.err.find("OMP_WAIT_POLICY=active"), std::string::npos) << show(r);
  r = cli.run(bench, 60, {{"OMP_WAIT_POLICY", ""}, {"GOMP_SPINCOUNT", "1000"}});
  ASSERT_EQ(r.status, 0) << show(r);
  EXPECT_NE(r.err.find("GOMP_SPINCOUNT=1000"), std::string::npos) << show(r);
  EXPECT_EQ(r.err.find("OMP_WAIT_POLICY=PASSIVE"), std::string::npos) << show(r);
  // Errors are unchanged by the re-execution: one line, exit 2.
  r = cli.run({"audit", "--mixer", "sideways"}, 60, {{"OMP_WAIT_POLICY", ""}});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"sideways"}));
}

}  // namespace
}  // namespace grassaudit::clitest
