// Checkpoint keys are register_module names: renaming one silently orphans every checkpoint
// already written. The golden lists below pin the full key set (with shapes) of a small model
// for each public mixer, so a rename fails here first; a deliberate rename must also teach
// checkpoint.cpp the old name (as for "plucker" -> "pluecker", tested on a real old file).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/checkpoint.h"
#include "core/language_model.h"
#include "core/token_mixer.h"
#include "util/error.h"

using namespace grassaudit;

namespace {

ModelConfig tiny_config(const std::string& mixer) {
  ModelConfig c;
  c.mixer = mixer;
  c.vocab_size = 11;
  c.d_model = 8;
  c.rank = 3;
  c.heads = 2;
  c.layers = 2;
  c.max_len = 6;
  c.d_ff = 12;
  c.offsets = {1, 2};
  return c;
}

std::string shape(const at::Tensor& t) {
  std::string s;
  for (auto n : t.sizes()) s += (s.empty() ? "" : ",") + std::to_string(n);
  return "[" + s + "]";
}

// "name [shape]" for every parameter, then "buffer name [shape]" for every buffer, in order.
std::vector<std::string> keys_of(torch::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& kv : m.named_parameters()) out.push_back(kv.key() + " " + shape(kv.value()));
  for (const auto& kv : m.named_buffers()) out.push_back("buffer " + kv.key() + " " + shape(kv.value()));
  return out;
}

std::vector<std::string> with_blocks(const std::vector<std::string>& mixer_keys) {
  std::vector<std::string> out{"tok_emb.weight [11,8]", "pos_emb.weight [6,8]"};
  for (const char* b : {"blocks.0.", "blocks.1."}) {
    for (const auto& k : mixer_keys) out.push_back(b + std::string("mixer.") + k);
    for (const char* k : {"ffn_in.weight [12,8]", "ffn_in.bias [12]", "ffn_out.weight [8,12]", "ffn_out.bias [8]",
                          "ffn_norm.weight [8]", "ffn_norm.bias [8]"})
      out.push_back(b + std::string(k));
  }
  out.push_back("final_norm.weight [8]");
  out.push_back("final_norm.bias [8]");
  return out;
}

const std::vector<std::string> kGrassmannKeys = {
    "reduce.weight [3,8]", "reduce.bias [3]", "pluecker.weight [8,3]", "pluecker.bias [8]",
    "gate.weight [8,16]",  "gate.bias [8]",   "norm.weight [8]",       "norm.bias [8]"};
const std::vector<std::string> kAttentionKeys = {"in_proj.weight [24,8]", "in_proj.bias [24]",
                                                 "out_proj.weight [8,8]", "out_proj.bias [8]",
                                                 "norm.weight [8]",       "norm.bias [8]"};

std::string fixture(const std::string& name) {
  return std::string(GRASSAUDIT_SOURCE_DIR) + "/tests/core/fixtures/" + name;
}

}  // namespace

TEST(CheckpointKeys, GoldenKeysOfEveryPublicMixer) {
  EXPECT_EQ(MixerRegistry::instance().public_names(), (std::vector<std::string>{"attention", "future", "past"}))
      << "a new public mixer: add its golden key list here";
  LanguageModel past(tiny_config("past")), future(tiny_config("future")), attention(tiny_config("attention"));
  EXPECT_EQ(keys_of(*past), with_blocks(kGrassmannKeys));
  EXPECT_EQ(keys_of(*future), with_blocks(kGrassmannKeys));
  EXPECT_EQ(keys_of(*attention), with_blocks(kAttentionKeys));
}

// A reference twin loads its public mixer's checkpoints: same keys, same shapes.
TEST(CheckpointKeys, ReferenceTwinsShareTheirMixersKeys) {
  const auto& reg = MixerRegistry::instance();
  for (const auto& name : reg.public_names()) {
    const std::string twin = reg.info(name).reference_twin;
    ASSERT_FALSE(twin.empty()) << name;
    LanguageModel a(tiny_config(name)), b(tiny_config(twin));
    EXPECT_EQ(keys_of(*a), keys_of(*b)) << name << " vs " << twin;
  }
}

// tests/core/fixtures/legacy_plucker_past.checkpoint was written by the code before the rename
// (git 202022f, W_plu registered as "plucker"): a program linked against that commit's
// grassaudit_core ran
//   ModelConfig c; c.mixer = "past"; c.vocab_size = 11; c.d_model = 4; c.rank = 3; c.layers = 1;
//   c.max_len = 4; c.heads = 1; c.d_ff = 4; c.dropout = 0.0; c.offsets = {1};
//   at::manual_seed(2024); LanguageModel lm(c);
//   save_checkpoint(path, lm, nullptr, {{"fixture", "pre-rename key plucker"}});
// (24 KB: mostly LibTorch's per-record archive overhead and the 5 KB RNG state.)
TEST(CheckpointKeys, FixtureReallyHoldsTheOldKey) {
  torch::serialize::InputArchive archive, model, blocks, block, mixer, unused;
  archive.load_from(fixture("legacy_plucker_past.checkpoint"));
  archive.read("model", model);
  model.read("blocks", blocks);
  blocks.read("0", block);
  block.read("mixer", mixer);
  EXPECT_TRUE(mixer.try_read("plucker", unused));
  EXPECT_FALSE(mixer.try_read("pluecker", unused));
}

TEST(CheckpointKeys, LegacyPluckerKeyStillLoads) {
  const std::string path = fixture("legacy_plucker_past.checkpoint");
  // load_checkpoint also verifies the stored weights checksum (computed by the old code over
  // the old names) against the loaded weights: every tensor arrived, bit for bit.
  LoadedCheckpoint ck = load_checkpoint(path);
  EXPECT_EQ(ck.meta.value("fixture", ""), "pre-rename key plucker");
  auto params = ck.model->named_parameters();
  ASSERT_TRUE(params.contains("blocks.0.mixer.pluecker.weight"));
  EXPECT_FALSE(params.contains("blocks.0.mixer.plucker.weight"));
  // The loaded W_plu is the stored "plucker" tensor, not a fresh initialisation.
  torch::serialize::InputArchive archive, model, blocks, block, mixer, plucker;
  archive.load_from(path);
  archive.read("model", model);
  model.read("blocks", blocks);
  blocks.read("0", block);
  block.read("mixer", mixer);
  mixer.read("plucker", plucker);
  at::Tensor stored_w, stored_b;
  plucker.read("weight", stored_w);
  plucker.read("bias", stored_b);
  EXPECT_TRUE(at::equal(params["blocks.0.mixer.pluecker.weight"], stored_w));
  EXPECT_TRUE(at::equal(params["blocks.0.mixer.pluecker.bias"], stored_b));
  // The model runs, and saving it again writes the new key, which loads to the same logits.
  auto ids = at::randint(0, 11, {1, 4}, at::kLong);
  ck.model->eval();
  auto logits = ck.model->forward(ids);
  const std::string resaved = ::testing::TempDir() + "resaved_legacy.ckpt";
  save_checkpoint(resaved, ck.model, nullptr, {});
  LoadedCheckpoint again = load_checkpoint(resaved);
  again.model->eval();
  EXPECT_TRUE(at::equal(again.model->forward(ids), logits));
  EXPECT_EQ(weights_sha256(*again.model), weights_sha256(*ck.model));
  std::filesystem::remove(resaved);
}

// The legacy fallback must not weaken the checksum: an old-key archive rewritten with its
// weights intact loads; with one W_plu entry changed it is refused.
TEST(CheckpointKeys, LegacyKeyChecksumStillGuardsTheWeights) {
  const std::string source = fixture("legacy_plucker_past.checkpoint");
  torch::serialize::InputArchive in;
  in.load_from(source);
  c10::IValue magic, meta;
  in.read("magic", magic);
  in.read("meta", meta);
  LoadedCheckpoint ck = load_checkpoint(source);
  // Writes the model under the old names, the way the old code's Module::save laid it out,
  // with the fixture's magic and meta (so its stored checksum).
  std::function<void(torch::nn::Module&, torch::serialize::OutputArchive&)> save_old =
      [&](torch::nn::Module& m, torch::serialize::OutputArchive& a) {
        for (const auto& kv : m.named_parameters(false)) a.write(kv.key(), kv.value());
        for (const auto& kv : m.named_buffers(false)) a.write(kv.key(), kv.value(), true);
        for (const auto& kv : m.named_children()) {
          torch::serialize::OutputArchive child;
          save_old(*kv.value(), child);
          a.write(kv.key() == "pluecker" ? "plucker" : kv.key(), child);
        }
      };
  const std::string copy = ::testing::TempDir() + "legacy_rewritten.ckpt";
  auto write_old = [&] {
    torch::serialize::OutputArchive out, model;
    save_old(*ck.model, model);
    out.write("magic", magic);
    out.write("meta", meta);
    out.write("model", model);
    out.save_to(copy);
  };
  write_old();
  EXPECT_NO_THROW(load_checkpoint(copy));
  {
    at::NoGradGuard ng;
    ck.model->named_parameters()["blocks.0.mixer.pluecker.weight"][0][0] += 1.0;
  }
  write_old();
  try {
    load_checkpoint(copy);
    FAIL() << "a tampered legacy checkpoint loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  std::filesystem::remove(copy);
}
