// Where the leak enters in a graph file (formats/graph/graph_units.h): a torch.export archive
// names the module of the node that reads ahead (its nn_module_stack), the op node and its source
// line; an ONNX graph the scope of the node's name; a causal file names none, and a file whose
// units cannot be recorded says why in a note and keeps its verdict.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "audit/causality_audit.h"
#include "audit/output_audit.h"
#include "formats/export/exported_program_target.h"
#include "formats/graph/graph_units.h"
#include "formats/model_file.h"
#include "formats/torchscript/torchscript_target.h"
#include "util/error.h"

using namespace grassaudit;
namespace fs = std::filesystem;

namespace {

const fs::path kGraphAudits = fs::path(GRASSAUDIT_SOURCE_DIR) / "audits";
const fs::path kOnnxFixtures = fs::path(GRASSAUDIT_SOURCE_DIR) / "tests" / "fixtures" / "onnx";

// The file audited as the CLI audits it at --seq-len 16.
AuditResult audit_graph_file(const fs::path& p, const std::vector<std::string>& inputs,
                             const StreamingOptions& streaming = {}) {
  std::vector<InputBinding> in;
  for (const auto& s : inputs) in.push_back(InputBinding::parse(s));
  auto t = open_model_file(p.string(), in, 1, 1.0, streaming);
  AuditOptions o;
  o.seq_len = 16;
  return run_output_audits(*t, file_audit_options(*t, o));
}

std::set<std::string> site_paths(const AuditResult& r) {
  std::set<std::string> out;
  if (r.leak_sites)
    for (const auto& s : *r.leak_sites) out.insert(s.path);
  return out;
}

bool has_note(const AuditResult& r, const std::string& part) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

int unit_named(const std::vector<ProbeUnit>& units, const std::string& path, const std::optional<std::string>& node) {
  for (size_t u = 0; u < units.size(); ++u)
    if (units[u].path == path && units[u].node == node) return static_cast<int>(u);
  return -1;
}

// One forward of token ids x [3, 16] recorded unit by unit: a value per unit, the root's output
// the target's own forward bit for bit (returned in `y`).
std::vector<UnitValues> plain_run(AuditTarget& t, UnitProbe& probe, at::Tensor& x, at::Tensor& y) {
  at::NoGradGuard no_grad;
  x = at::randint(0, 64, {3, 16}, at::kLong);
  y = t.forward(x);
  auto plain = probe.run(x, {}, {});
  EXPECT_EQ(plain.size(), probe.units().size());
  EXPECT_TRUE(!plain.empty() && at::equal(plain[0].outputs.at(0), y));
  return plain;
}

}  // namespace

TEST(GraphLeakSites, ModuleStacksFramesAndScopesAreRead) {
  const auto stack = parse_module_stack(
      "L__self__,,__main__.TokenLM;L__self___mixer,mixer,__main__.GptBlock;L__self___mixer_attn,mixer.attn,__main__.Sdpa");
  ASSERT_EQ(stack.size(), 3u);
  EXPECT_EQ(stack[0], (std::pair<std::string, std::string>{"", "__main__.TokenLM"}));
  EXPECT_EQ(stack[2], (std::pair<std::string, std::string>{"mixer.attn", "__main__.Sdpa"}));
  EXPECT_TRUE(parse_module_stack("_empty_nn_module_stack_from_metadata_hook,_empty_nn_module_stack_from_metadata_hook,"
                                 "_empty_nn_module_stack_from_metadata_hook")
                  .empty());

  const auto frame = innermost_frame(
      "  File \"/work/main/reference/make_export_fixtures.py\", line 63, in forward\n    return self.head(h)\n"
      "  File \"/work/main/reference/make_export_fixtures.py\", line 223, in forward\n    return torch.cond(c, f, g, (h,))\n"
      "  File \"/usr/lib/python3/dist-packages/torch/_higher_order_ops/cond.py\", line 144, in cond\n    return x\n");
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->file, "make_export_fixtures.py");
  EXPECT_EQ(frame->line, 223);
  EXPECT_EQ(frame->function, "forward");
  EXPECT_FALSE(innermost_frame("File \"torch/fx/passes/runtime_assert.py\", line 24, in insert_deferred_runtime_asserts"));

  EXPECT_EQ(onnx_scope("/blocks.0/mix/TopK"), (std::vector<std::string>{"blocks.0", "mix"}));
  EXPECT_EQ(onnx_scope("/mixer/rnn/LSTM"), (std::vector<std::string>{"mixer", "rnn"}));
  EXPECT_TRUE(onnx_scope("/Add").empty());
  EXPECT_TRUE(onnx_scope("Constant_33").empty());
}

// The archive's units: the root, its modules (parents first) and each op node under the module
// it runs in; one recorded forward is the plain forward, and a held module's outputs are what the
// rest of the graph reads.
TEST(GraphLeakSites, ExportUnitsAreModulesAndTheirNodes) {
  ExportedProgramTarget t((kGraphAudits / "export" / "gpt_block_no_mask.pt2").string(), {InputBinding::parse("tokens:64")});
  UnitProbe* probe = t.unit_probe();
  ASSERT_NE(probe, nullptr);
  const auto& units = probe->units();
  ASSERT_GT(units.size(), 3u);
  EXPECT_EQ(units[0].path, "");
  EXPECT_EQ(units[0].parent, -1);
  EXPECT_EQ(units[0].op, std::optional<std::string>("TokenLM"));
  for (size_t u = 1; u < units.size(); ++u) EXPECT_LT(units[u].parent, static_cast<int>(u)) << units[u].path;
  const int mixer = unit_named(units, "mixer", std::nullopt), attn = unit_named(units, "mixer.attn", std::nullopt);
  ASSERT_GT(mixer, 0);
  ASSERT_GT(attn, 0);
  EXPECT_EQ(units[static_cast<size_t>(attn)].parent, mixer);
  EXPECT_EQ(units[static_cast<size_t>(attn)].op, std::optional<std::string>("Sdpa"));
  const int sdpa = unit_named(units, "mixer.attn", std::string("scaled_dot_product_attention"));
  ASSERT_GT(sdpa, 0);
  EXPECT_EQ(units[static_cast<size_t>(sdpa)].parent, attn);
  EXPECT_EQ(units[static_cast<size_t>(sdpa)].op, std::optional<std::string>("aten.scaled_dot_product_attention"));
  EXPECT_EQ(units[static_cast<size_t>(sdpa)].source, std::optional<std::string>("Sdpa.forward, make_export_fixtures.py:99"));

  at::NoGradGuard no_grad;
  at::Tensor x, y;
  const auto plain = plain_run(t, *probe, x, y);
  ASSERT_EQ(plain.size(), units.size());
  const auto& a = plain[static_cast<size_t>(attn)];
  EXPECT_TRUE(a.called);
  ASSERT_EQ(a.outputs.size(), 1u);
  EXPECT_EQ(a.outputs[0].sizes().vec(), (std::vector<int64_t>{3, 16, a.outputs[0].size(2)}));
  // Fed its own inputs: the same forward, bit for bit.
  const auto fed = probe->run(x, {{attn, a.inputs}}, {});
  EXPECT_TRUE(at::equal(fed[0].outputs.at(0), y));
  // Held to zeros: recorded as held, and what follows reads them.
  const auto held = probe->run(x, {}, {{attn, {at::zeros_like(a.outputs[0])}}});
  EXPECT_TRUE(at::equal(held[static_cast<size_t>(attn)].outputs.at(0), at::zeros_like(a.outputs[0])));
  EXPECT_FALSE(at::equal(held[0].outputs.at(0), y));
  EXPECT_THROW(probe->run(x, {}, {{attn, {}}}), InputError);
}

TEST(GraphLeakSites, ExportFilesNameTheModuleThatReadsAhead) {
  const AuditResult block = audit_graph_file(kGraphAudits / "export" / "gpt_block_no_mask.pt2", {"tokens:64"});
  EXPECT_EQ(block.verdict(), Verdict::kLeaky);
  ASSERT_TRUE(block.leak_sites.has_value());
  ASSERT_EQ(block.leak_sites->size(), 1u);
  const LeakSite& s = block.leak_sites->front();
  EXPECT_EQ(s.path, "mixer.attn");
  EXPECT_EQ(s.op, std::optional<std::string>("aten.scaled_dot_product_attention"));
  EXPECT_EQ(s.node, std::optional<std::string>("scaled_dot_product_attention"));
  EXPECT_EQ(s.source, std::optional<std::string>("Sdpa.forward, make_export_fixtures.py:99"));
  EXPECT_EQ(s.horizon, 15);

  // flip, cumsum, flip: both flips read ahead, the cumsum between them does not.
  const AuditResult flipped = audit_graph_file(kGraphAudits / "export" / "cumsum_flipped.pt2", {"tokens:64"});
  EXPECT_EQ(site_paths(flipped), (std::set<std::string>{"mixer"}));
  for (const auto& site : *flipped.leak_sites) EXPECT_EQ(site.op, std::optional<std::string>("aten.flip")) << *site.node;

  EXPECT_EQ(site_paths(audit_graph_file(kGraphAudits / "export" / "conv_same.pt2", {"tokens:64"})),
            (std::set<std::string>{"mixer.conv"}));

  const AuditResult causal = audit_graph_file(kGraphAudits / "export" / "gpt_block.pt2", {"tokens:64"});
  EXPECT_EQ(causal.verdict(), Verdict::kCausal);
  EXPECT_FALSE(causal.leak_sites.has_value());
}

TEST(GraphLeakSites, OnnxFilesNameTheScopeThatReadsAhead) {
  const AuditResult off = audit_graph_file(kOnnxFixtures / "attention_triu_off_by_one.onnx", {"ids=tokens:50"});
  EXPECT_EQ(off.verdict(), Verdict::kLeaky);
  EXPECT_EQ(site_paths(off), (std::set<std::string>{"mixer"}));
  for (const auto& s : *off.leak_sites) {
    ASSERT_TRUE(s.node.has_value());
    EXPECT_EQ(s.node->rfind("/mixer/", 0), 0u) << *s.node;
    EXPECT_FALSE(s.source.has_value());
  }
  // The LSTM node runs time first: its group, whose boundary is [B, L, ...], is the site.
  EXPECT_EQ(site_paths(audit_graph_file(kOnnxFixtures / "lstm_bidirectional.onnx", {"x=features:4"})),
            (std::set<std::string>{"mixer.rnn"}));

  const AuditResult causal = audit_graph_file(kOnnxFixtures / "attention_triu.onnx", {"ids=tokens:50"});
  EXPECT_EQ(causal.verdict(), Verdict::kCausal);
  EXPECT_FALSE(causal.leak_sites.has_value());
}

TEST(GraphLeakSites, WhereUnitsCannotBeRecordedTheVerdictStands) {
  // Batch 2 fixed in the file: the probe rows would take several calls.
  const AuditResult fixed = audit_graph_file(kGraphAudits / "export" / "bilstm.pt2", {"tokens:64"});
  EXPECT_EQ(fixed.verdict(), Verdict::kLeaky);
  EXPECT_FALSE(fixed.leak_sites.has_value());
  EXPECT_TRUE(has_note(fixed, "leak sites: not run (the units are recorded in one call of the graph"));

  StreamingOptions streaming;
  streaming.state.push_back(StreamingOptions::parse_pair("state=state_out"));
  const AuditResult stream =
      audit_graph_file(kOnnxFixtures / "stream_gru_lookahead.onnx", {"x=features:4"}, streaming);
  EXPECT_EQ(stream.verdict(), Verdict::kLeaky);
  EXPECT_FALSE(stream.leak_sites.has_value());
  EXPECT_TRUE(has_note(stream, "leak sites: not looked for: a streaming ONNX graph sees one chunk per call"));
}

// TorchScript: the submodules forward calls, by attribute path (a ModuleList's blocks.0.mixer,
// not 0.mixer), recorded through taps in an inlined copy of forward.
TEST(TorchScriptLeakSites, UnitsAreTheCalledSubmodulesByPath) {
  TorchScriptTarget t((kGraphAudits / "controls" / "grassmann_future_per_layer.pt").string(),
                      {InputBinding::parse("tokens:64")});
  UnitProbe* probe = t.unit_probe();
  ASSERT_NE(probe, nullptr) << t.why_no_units();
  const auto& units = probe->units();
  EXPECT_EQ(units[0].path, "");
  EXPECT_EQ(units[0].parent, -1);
  EXPECT_EQ(units[0].op, std::optional<std::string>("LanguageModel"));
  for (size_t u = 1; u < units.size(); ++u) EXPECT_LT(units[u].parent, static_cast<int>(u)) << units[u].path;
  const int block = unit_named(units, "blocks.0", std::nullopt), mixer = unit_named(units, "blocks.0.mixer", std::nullopt);
  ASSERT_GT(block, 0);
  ASSERT_GT(mixer, 0);
  ASSERT_GT(unit_named(units, "blocks.1.mixer", std::nullopt), 0);
  EXPECT_EQ(units[static_cast<size_t>(mixer)].parent, block);
  ASSERT_TRUE(units[static_cast<size_t>(mixer)].source.has_value());
  EXPECT_NE(units[static_cast<size_t>(mixer)].source->find(".forward, "), std::string::npos)
      << *units[static_cast<size_t>(mixer)].source;

  at::NoGradGuard no_grad;
  at::Tensor x, y;
  const auto plain = plain_run(t, *probe, x, y);
  ASSERT_EQ(plain.size(), units.size());
  const auto& m = plain[static_cast<size_t>(mixer)];
  ASSERT_TRUE(m.called);
  ASSERT_FALSE(m.inputs.empty());
  ASSERT_FALSE(m.outputs.empty());
  // Held to its own outputs the forward is the same; held to zeros it is not, and the zeros are recorded.
  EXPECT_TRUE(at::equal(probe->run(x, {}, {{mixer, m.outputs}})[0].outputs.at(0), y));
  std::vector<at::Tensor> zeros;
  for (const auto& o : m.outputs) zeros.push_back(at::zeros_like(o));
  const auto zeroed = probe->run(x, {}, {{mixer, zeros}});
  EXPECT_FALSE(at::equal(zeroed[0].outputs.at(0), y));
  EXPECT_TRUE(at::equal(zeroed[static_cast<size_t>(mixer)].outputs.at(0), zeros.at(0)));
  // Fed other inputs, it computes from them; given the wrong number of leaves, an error (the
  // interpreter passes the tap's InputError on as its own runtime error).
  std::vector<at::Tensor> fed;
  for (const auto& i : m.inputs) fed.push_back(i + 1.0);
  EXPECT_FALSE(at::equal(probe->run(x, {{mixer, fed}}, {})[static_cast<size_t>(mixer)].outputs.at(0), m.outputs.at(0)));
  EXPECT_ANY_THROW(probe->run(x, {}, {{mixer, {}}}));
  // And after all that, the plain forward is the plain forward again.
  EXPECT_TRUE(at::equal(t.forward(x), y));
}

TEST(TorchScriptLeakSites, ControlsNameTheirPlantedSites) {
  const auto controls = kGraphAudits / "controls";
  const AuditResult shift = audit_graph_file(controls / "token_shift_wrong_way.pt", {"tokens:64"});
  EXPECT_EQ(shift.verdict(), Verdict::kLeaky);
  EXPECT_EQ(site_paths(shift), (std::set<std::string>{"mixer"}));
  ASSERT_TRUE(shift.leak_sites.has_value());
  ASSERT_FALSE(shift.leak_sites->empty());
  EXPECT_EQ(shift.leak_sites->front().op, std::optional<std::string>("TokenShift"));
  ASSERT_TRUE(shift.leak_sites->front().source.has_value());
  EXPECT_EQ(shift.leak_sites->front().source->rfind("TokenShift.forward, make_audit_controls.py:", 0), 0u)
      << *shift.leak_sites->front().source;

  const AuditResult grassmann = audit_graph_file(controls / "grassmann_future_per_layer.pt", {"tokens:64"});
  EXPECT_EQ(grassmann.verdict(), Verdict::kLeaky);
  EXPECT_EQ(site_paths(grassmann), (std::set<std::string>{"blocks.0.mixer", "blocks.1.mixer"}));

  const AuditResult fft = audit_graph_file(controls / "fft_conv_circular.pt", {"features:4"});
  EXPECT_EQ(fft.verdict(), Verdict::kLeaky);
  EXPECT_EQ(site_paths(fft), (std::set<std::string>{"core"}));
}

TEST(TorchScriptLeakSites, CausalControlNamesNone) {
  const AuditResult r = audit_graph_file(kGraphAudits / "controls" / "token_shift.pt", {"tokens:64"});
  EXPECT_EQ(r.verdict(), Verdict::kCausal);
  EXPECT_TRUE(site_paths(r).empty());
}
