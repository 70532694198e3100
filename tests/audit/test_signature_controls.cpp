// The model-signature controls (reference/make_signature_controls.py): tuple and dict outputs
// audited leaf by leaf, several inputs (an attention mask), channels-first audio; every verdict
// and horizon as brute force, leaf by leaf.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <string>

#include "audit/audit_suite.h"
#include "formats/model_file.h"
#include "audit/model_signature.h"
#include "audit/output_audit.h"
#include "formats/torchscript/torchscript_target.h"
#include "util/error.h"

using namespace grassaudit;

namespace {
const std::string kDir = std::string(GRASSAUDIT_SOURCE_DIR) + "/audits/";
}

TEST(SignatureControls, MatchBruteForceLeafByLeaf) {
  AuditOptions o;
  auto results = run_audit_suite(kDir + "signature.json", o, open_model_file);
  ASSERT_GE(results.size(), 18u);
  for (const auto& r : results) EXPECT_TRUE(r.pass) << r.name << ": " << r.detail;
}

TEST(SignatureControls, ASmallLeakyLeafIsTheWorstAndLeavesWithoutTimeAreSkipped) {
  AuditOptions o;
  o.seq_len = 16;
  o.trials = 2;
  {
    TorchScriptTarget t(kDir + "signature/tuple_output_leaky_aux.pt", {InputBinding::parse("tokens:64")});
    auto r = run_output_audits(t, o);
    EXPECT_EQ(r.verdict(), Verdict::kLeaky);
    EXPECT_EQ(r.worst_output, "[1]");
    ASSERT_EQ(r.outputs.size(), 2u);
    ASSERT_TRUE(r.outputs[0].audited && r.outputs[1].audited);
    EXPECT_EQ(r.outputs[0].audited->verdict(), Verdict::kCausal);
    EXPECT_EQ(r.outputs[1].audited->leak_horizon, 1);
  }
  {
    TorchScriptTarget t(kDir + "signature/dict_output_causal.pt", {InputBinding::parse("tokens:64")});
    auto r = run_output_audits(t, o);
    ASSERT_EQ(r.outputs.size(), 4u);
    EXPECT_EQ(r.outputs[0].path, "[\"logits\"]");
    EXPECT_NE(r.outputs[1].skipped.find("not the length"), std::string::npos) << r.outputs[1].skipped;   // pooled [B, D]
    EXPECT_NE(r.outputs[2].skipped.find("not floating point"), std::string::npos) << r.outputs[2].skipped;  // lengths
    EXPECT_TRUE(r.outputs[3].skipped.empty());
  }
}

// State a forward updates without changing its outputs is put back: the module comes back as it
// was given, whatever the audit ran. State that changes outputs, and noise, are refused.
TEST(SignatureControls, StateIsRestoredOrRefusedAndNoiseIsRefused) {
  AuditOptions o;
  o.seq_len = 16;
  o.trials = 1;
  {
    TorchScriptTarget t(kDir + "signature/unused_call_counter.pt", {InputBinding::parse("tokens:64")});
    EXPECT_EQ(run_output_audits(t, o).verdict(), Verdict::kCausal);
    t.snapshot_state(false);
    t.set_train(false);
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
    t.forward(at::randint(0, 64, {2, 16}, gen, at::TensorOptions().dtype(at::kLong)));
    EXPECT_NE(t.changed_state().find("buffer 'calls'"), std::string::npos);
    t.end_state_tracking();
  }
  auto refusal = [&](const std::string& file) -> std::string {
    TorchScriptTarget t(kDir + "signature/" + file, {InputBinding::parse("tokens:64")});
    try {
      run_output_audits(t, o);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  const std::string counter = refusal("call_counter_buffer.pt");
  EXPECT_NE(counter.find("forward changes its state: buffer 'calls'"), std::string::npos) << counter;
  EXPECT_NE(counter.find("depend on earlier calls"), std::string::npos) << counter;
  const std::string offset = refusal("cache_offset_attribute.pt");
  EXPECT_NE(offset.find("attribute 'offset' (0 -> 16)"), std::string::npos) << offset;
  const std::string noise = refusal("noise_in_eval_mode.pt");
  EXPECT_NE(noise.find("nondeterministic in eval mode: the same input moved outputs by"), std::string::npos) << noise;
  EXPECT_EQ(noise.find('\n'), std::string::npos);
}

// torch.jit.trace bakes the bidirectional RNN's float32 initial state into the graph: the plain
// float64 forward fails, and the float64 decision runs a copy with those constants promoted.
TEST(SignatureControls, TracedFloat32ConstantsArePromotedForTheFloat64Decision) {
  AuditOptions o;
  o.seq_len = 64;
  o.seq_lens = {64};
  o.trials = 1;
  o.length_check = false;
  o.mode = "eval";
  for (const char* cell : {"lstm", "gru"}) {
    SCOPED_TRACE(cell);
    TorchScriptTarget t(kDir + "signature/traced_bidirectional_" + cell + ".pt", {InputBinding::parse("tokens:64")});
    auto r = run_output_audits(t, o);
    EXPECT_EQ(r.precision, "float64");
    EXPECT_EQ(r.leak_horizon, 63);
    ASSERT_FALSE(r.notes.empty());
    EXPECT_NE(r.notes[0].find("float32 constants promoted to float64"), std::string::npos) << r.notes[0];
    EXPECT_EQ(t.dtype(), at::kFloat);  // the target comes back in its own dtype
  }
}

TEST(SignatureControls, BadSignaturesAreOneLineInputErrors) {
  const std::string mask = kDir + "signature/attention_mask_causal.pt";
  auto error = [&](const std::string& file, const std::vector<std::string>& in, int64_t axis = 1) -> std::string {
    std::vector<InputBinding> b;
    try {
      for (const auto& s : in) b.push_back(InputBinding::parse(s));
      TorchScriptTarget t(file, b, axis);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  // A missing argument lists the arguments and their types.
  EXPECT_NE(error(mask, {"tokens:64"}).find("forward(self, input_ids: Tensor, attention_mask: Tensor)"), std::string::npos);
  EXPECT_NE(error(mask, {"tokens:64", "ones", "ones"}).find("3 --input values for 2 arguments"), std::string::npos);
  EXPECT_NE(error(mask, {"tokens:64", "mask=ones"}).find("no argument 'mask'"), std::string::npos);
  EXPECT_NE(error(mask, {"ones", "zeros"}).find("nothing to perturb"), std::string::npos);
  EXPECT_NE(error(mask, {"tokens:64", "features:2"}).find("cannot be perturbed together"), std::string::npos);
  EXPECT_NE(error(mask, {"tokens:64", "ones"}, 0).find("dimension 0 is the batch"), std::string::npos);
  EXPECT_NE(error(mask, {"tokens:64", "ones"}, 2).find("beyond the rank"), std::string::npos);
  EXPECT_NE(error(kDir + "signature/audio_channels_first_causal.pt", {"features:4"}, 3).find("beyond the rank"),
            std::string::npos);
  EXPECT_THROW(InputBinding::parse("words:5"), InputError);
  EXPECT_THROW(InputBinding::parse("=ones"), InputError);
  EXPECT_THROW(InputBinding::parse("x=tokens:0"), InputError);
  EXPECT_EQ(InputBinding::parse("attention_mask=ones").str(), "attention_mask=ones");
  EXPECT_THROW(validate_output_path("logits"), InputError);
  EXPECT_THROW(validate_output_path("[\"a]"), InputError);
  validate_output_path("[1][\"logits\"][0]");
}
