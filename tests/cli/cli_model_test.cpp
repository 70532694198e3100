// Bad models: TorchScript files that are not TorchScript or misbehave (wrong input type, wrong
// output shape or type, an exception, NaN / Inf outputs), and checkpoints that are missing,
// truncated, corrupt, from another config or mixer, or not grassaudit checkpoints, through
// `audit --model`, `audit --checkpoint`, `eval --checkpoint` and `train --resume`.
// Each ends in one line "grassaudit <cmd>: error: <file>: <problem>", exit 2, no output written.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_checkpoints.h"
#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

std::vector<std::string> audit_model_args(const std::string& model, const std::string& json) {
  return {"audit", "--model", model, "--input", "features:4", "--seq-len", "8", "--trials", "1",
          "--threads", "1", "--json", json};
}

// A tuple output (x, x) is audited leaf by leaf (it used to be refused): two causal leaves.
TEST(CliModel, TupleOutputIsAuditedLeafByLeaf) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run(audit_model_args(fixture("tuple_output.pt"), t.file("r.json")));
  ASSERT_EQ(r.status, 0) << show(r);
  auto j = nlohmann::json::parse(read_text(t.file("r.json")));
  ASSERT_EQ(j["outputs"].size(), 2u);
  EXPECT_EQ(j["outputs"][0]["path"], "[0]");
  EXPECT_EQ(j["outputs"][1]["path"], "[1]");
  EXPECT_EQ(j["outputs"][1]["verdict"], "causal");
  EXPECT_EQ(j["worst_output"], "[0]");
  // --output picks one leaf; a path that names none is one line, exit 2.
  r = cli.run({"audit", "--model", fixture("tuple_output.pt"), "--input", "features:4", "--seq-len", "8", "--trials",
               "1", "--threads", "1", "--output", "[1]", "--json", t.file("one.json")});
  ASSERT_EQ(r.status, 0) << show(r);
  j = nlohmann::json::parse(read_text(t.file("one.json")));
  EXPECT_EQ(j["outputs"][0]["skipped"], "not selected (--output)");
  EXPECT_EQ(j["worst_output"], "[1]");
  r = cli.run({"audit", "--model", fixture("tuple_output.pt"), "--input", "features:4", "--seq-len", "8", "--output",
               "[2]"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"--output [2] names no leaf", "[0] [2, 8, 4]"}));
  r = cli.run({"audit", "--model", fixture("tuple_output.pt"), "--input", "features:4", "--seq-len", "8", "--output",
               "0"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"--output '0'", "[INDEX]"}));
}

TEST(CliModel, WellBehavedFixtureAuditsCausal) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  auto r = cli.run(audit_model_args(fixture("ok_causal.pt"), t.file("r.json")));
  EXPECT_EQ(r.status, 0) << show(r);
  EXPECT_TRUE(fs::exists(t.file("r.json")));
  EXPECT_TRUE(NoTempFiles(t.path()));
}

struct BadModel {
  const char* file;
  std::vector<std::string> needles;
};

TEST(CliModel, MisbehavingTorchScriptIsOneLineError) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  const std::vector<BadModel> cases{
      {"wrong_input.pt", {"wrong_input.pt", "forward failed", "List[int]"}},
      {"wrong_channels.pt", {"wrong_channels.pt", "forward failed", "shapes"}},
      {"wrong_shape.pt", {"wrong_shape.pt", "output shape [", ", 4] does not start with [B, L]"}},  // [B, 4]: L dropped
      {"scalar_output.pt", {"scalar_output.pt", "output shape []"}},
      {"int_output.pt", {"int_output.pt", "not floating point"}},
      {"throws.pt", {"throws.pt", "forward failed", "deliberate failure"}},
      {"returns_nan.pt", {"returns_nan.pt", "NaN or Inf"}},
      {"returns_inf.pt", {"returns_inf.pt", "NaN or Inf"}},
  };
  TempDir t;
  Cli cli(t);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    auto r = cli.run(audit_model_args(fixture(c.file), t.file("r.json")));
    EXPECT_TRUE(IsOneLineError(r, "audit", c.needles));
    EXPECT_FALSE(fs::exists(t.file("r.json")));
  }
  // Token input into a model that only takes features: refused the same way.
  auto r = cli.run({"audit", "--model", fixture("wrong_channels.pt"), "--input", "tokens:16", "--seq-len", "8",
                    "--trials", "1", "--threads", "1"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"wrong_channels.pt", "forward failed"}));
  EXPECT_TRUE(NoTempFiles(t.path()));
}

TEST(CliModel, UnreadableTorchScriptFilesAreOneLineErrors) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string good = read_text(fixture("ok_causal.pt"));
  write_text(t.file("text.pt"), "this is not a model\n");
  write_text(t.file("empty.pt"), "");
  write_text(t.file("truncated.pt"), good.substr(0, good.size() / 2));
  write_text(t.file("truncated_end.pt"), good.substr(0, good.size() - 10));
  fs::create_directories(t.file("dir.pt"));
  write_tiny_checkpoint(t.file("a.ckpt"), {});
  const std::vector<BadModel> cases{
      {"missing.pt", {"missing.pt", "No such file"}},
      {"dir.pt", {"dir.pt", "is a directory"}},
      {"text.pt", {"text.pt", "not a PyTorch file", "torch.jit.script"}},
      {"empty.pt", {"empty.pt", "not a PyTorch file"}},
      {"truncated.pt", {"truncated.pt", "truncated or damaged"}},
      {"truncated_end.pt", {"truncated_end.pt", "truncated or damaged"}},
      {"a.ckpt", {"a.ckpt", "no forward"}},  // a grassaudit checkpoint is an archive, not a model
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    auto r = cli.run(audit_model_args(t.file(c.file), t.file("r.json")));
    EXPECT_TRUE(IsOneLineError(r, "audit", c.needles));
    EXPECT_FALSE(fs::exists(t.file("r.json")));
  }
}

// The bad checkpoints every checkpoint-reading command must refuse, with the words of the error.
std::vector<BadModel> make_bad_checkpoints(const TempDir& t) {
  write_tiny_checkpoint(t.file("good.ckpt"), {});
  const std::string good = read_text(t.file("good.ckpt"));
  write_text(t.file("empty.ckpt"), "");
  write_text(t.file("text.ckpt"), "{\"model\": {}}\n");
  write_text(t.file("trunc10.ckpt"), good.substr(0, good.size() / 10));
  write_text(t.file("trunc50.ckpt"), good.substr(0, good.size() / 2));
  write_text(t.file("trunc99.ckpt"), good.substr(0, good.size() - 1));
  fs::create_directories(t.file("dir.ckpt"));
  write_checkpoint_with_meta(t.file("nometa.ckpt"), "");
  write_checkpoint_with_meta(t.file("badmeta.ckpt"), "{not json");
  write_checkpoint_with_meta(t.file("nomodel.ckpt"), R"({"train": {}})");
  write_checkpoint_with_meta(t.file("unknownkey.ckpt"), R"({"model": {"d_modle": 16}})");
  write_checkpoint_with_meta(t.file("negative.ckpt"), R"({"model": {"d_model": -16}})");
  write_checkpoint_with_meta(t.file("noweights.ckpt"), R"({"model": {"d_model": 16, "rank": 4, "layers": 1,
      "max_len": 16, "heads": 2, "d_ff": 32, "offsets": [1], "vocab_size": 64}})");
  TinyModel small, wide, attention;
  wide.d_model = 32;
  attention.mixer = "attention";
  write_mismatched_checkpoint(t.file("otherconfig.ckpt"), wide, small);
  write_mismatched_checkpoint(t.file("othermixer.ckpt"), attention, small);
  return {
      {"missing.ckpt", {"missing.ckpt", "No such file"}},
      {"dir.ckpt", {"dir.ckpt", "is a directory"}},
      {"empty.ckpt", {"empty.ckpt", "not a readable grassaudit checkpoint"}},
      {"text.ckpt", {"text.ckpt", "not a readable grassaudit checkpoint"}},
      {"trunc10.ckpt", {"trunc10.ckpt", "checkpoint"}},
      {"trunc50.ckpt", {"trunc50.ckpt", "checkpoint"}},
      {"trunc99.ckpt", {"trunc99.ckpt", "checkpoint"}},
      {"nometa.ckpt", {"nometa.ckpt", "no meta"}},
      {"badmeta.ckpt", {"badmeta.ckpt", "not JSON"}},
      {"nomodel.ckpt", {"nomodel.ckpt", "no model config"}},
      {"unknownkey.ckpt", {"unknownkey.ckpt", "d_modle"}},
      {"negative.ckpt", {"negative.ckpt", "d_model"}},
      {"noweights.ckpt", {"noweights.ckpt", "no model weights"}},
      {"otherconfig.ckpt", {"otherconfig.ckpt", "do not match the stored config"}},
      {"othermixer.ckpt", {"othermixer.ckpt", "do not match the stored config"}},
  };
}

// Every single flipped byte is either reported (one line naming the file) or harmless (zip
// metadata nothing reads): a checkpoint never loads with different weights.
TEST(CliCheckpoint, FlippedBytesAreDetectedOrHarmless) {
  TempDir t;
  write_tiny_checkpoint(t.file("good.ckpt"), {});
  const std::string good = read_text(t.file("good.ckpt"));
  const std::string want = loaded_weights_hash(t.file("good.ckpt"));
  ASSERT_FALSE(want.empty());
  std::vector<std::string> detected;
  int harmless = 0;
  const size_t step = std::max<size_t>(1, good.size() / 97);
  for (size_t pos = 0; pos < good.size(); pos += step) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x5a);
    const std::string path = t.file("flip" + std::to_string(pos) + ".ckpt");
    write_text(path, bad);
    std::string why;
    if (checkpoint_loads(path, &why)) {
      EXPECT_EQ(loaded_weights_hash(path), want) << "byte " << pos << " changed the weights silently";
      ++harmless;
      fs::remove(path);
    } else {
      EXPECT_NE(why.find(path), std::string::npos) << "byte " << pos << ": " << why;
      EXPECT_EQ(why.find('\n'), std::string::npos) << "byte " << pos << ": " << why;
      detected.push_back(path);
    }
  }
  RecordProperty("detected", static_cast<int>(detected.size()));
  RecordProperty("harmless", harmless);
  EXPECT_GT(detected.size(), 30u);  // about half the bytes are zip metadata nothing reads
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  Cli cli(t);
  for (size_t i = 0; i < detected.size(); i += detected.size() / 4 + 1) {
    SCOPED_TRACE(detected[i]);
    auto r = cli.run({"audit", "--checkpoint", detected[i], "--trials", "1", "--threads", "1"});
    EXPECT_TRUE(IsOneLineError(r, "audit", {detected[i]}));
  }
}

TEST(CliCheckpoint, AuditRefusesBadCheckpoints) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  for (const auto& c : make_bad_checkpoints(t)) {
    SCOPED_TRACE(c.file);
    auto r = cli.run({"audit", "--checkpoint", t.file(c.file), "--trials", "1", "--threads", "1", "--json",
                      t.file("r.json")});
    EXPECT_TRUE(IsOneLineError(r, "audit", c.needles));
    EXPECT_FALSE(fs::exists(t.file("r.json")));
  }
  // A TorchScript model is not a checkpoint.
  auto r = cli.run({"audit", "--checkpoint", fixture("ok_causal.pt"), "--threads", "1"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"ok_causal.pt", "not a grassaudit checkpoint"}));
  // A checkpoint of one mixer audited as another.
  r = cli.run({"audit", "--checkpoint", t.file("good.ckpt"), "--mixer", "future", "--threads", "1"});
  EXPECT_TRUE(IsOneLineError(r, "audit", {"--mixer future", "past"}));
  EXPECT_TRUE(NoTempFiles(t.path()));
}

TEST(CliCheckpoint, EvalRefusesBadCheckpoints) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  make_fake_data(t.file("data"));
  for (const auto& c : make_bad_checkpoints(t)) {
    SCOPED_TRACE(c.file);
    auto r = cli.run({"eval", "--checkpoint", t.file(c.file), "--split", "valid", "--data-dir", t.file("data"),
                      "--allow-other-data", "--threads", "1", "--json", t.file("e.json")});
    EXPECT_TRUE(IsOneLineError(r, "eval", c.needles));
    EXPECT_FALSE(fs::exists(t.file("e.json")));
  }
  // Loadable, but not usable for evaluation.
  write_tiny_checkpoint(t.file("notrain.ckpt"), {});
  auto r = cli.run({"eval", "--checkpoint", t.file("notrain.ckpt"), "--split", "valid", "--data-dir",
                    t.file("data"), "--allow-other-data", "--threads", "1"});
  EXPECT_TRUE(IsOneLineError(r, "eval", {"notrain.ckpt", "vocab_size 64", "neither tokenizer"}, false));
  write_tiny_checkpoint(t.file("word.ckpt"), {}, "word");
  r = cli.run({"eval", "--checkpoint", t.file("word.ckpt"), "--split", "test", "--data-dir", t.file("data"),
               "--allow-other-data", "--threads", "1", "--json", t.file("e.json")});
  EXPECT_TRUE(IsOneLineError(r, "eval", {"word.ckpt", "vocab_size 64", "word tokenizer"}, false));
  EXPECT_FALSE(fs::exists(t.file("e.json")));
  EXPECT_TRUE(NoTempFiles(t.path()));
}

TEST(CliCheckpoint, ResumeRefusesBadCheckpoints) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  make_fake_data(t.file("data"));
  for (const auto& c : make_bad_checkpoints(t)) {
    SCOPED_TRACE(c.file);
    auto r = cli.run({"train", "--resume", t.file(c.file), "--data-dir", t.file("data"), "--allow-other-data",
                      "--threads", "1", "--out", t.file("run")});
    EXPECT_TRUE(IsOneLineError(r, "train", c.needles));
    EXPECT_FALSE(fs::exists(t.file("run")));
  }
  // A model-only checkpoint (no training state) cannot be resumed.
  auto r = cli.run({"train", "--resume", t.file("good.ckpt"), "--data-dir", t.file("data"), "--allow-other-data",
                    "--threads", "1", "--out", t.file("run")});
  EXPECT_TRUE(IsOneLineError(r, "train", {"good.ckpt", "not a training checkpoint"}, false));
  EXPECT_FALSE(fs::exists(t.file("run")));
}

}  // namespace
}  // namespace grassaudit::clitest
