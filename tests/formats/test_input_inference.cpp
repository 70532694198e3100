// The inputs a model file describes, read when no --input is given (formats/model_inputs.h):
// every ONNX fixture against the --input its generator wrote in the manifest, torch.export
// archives (an embedding on a parameter, a mask, declared features), TorchScript modules written
// here (embedding, linear in a submodule, transpose + pad + conv1d, layer_norm, a default left
// out), ONNX graphs written here (a Gather through a Cast, a bool mask), and files that do not say
// enough: one line naming each input, its dtype and shape, and what to pass.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <torch/csrc/jit/api/module.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <iostream>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/input_findings.h"
#include "formats/model_inputs.h"
#include "support/test_support_common.h"
#include "util/error.h"

namespace grassaudit {
namespace {

std::string source(const std::string& rel) { return std::string(GRASSAUDIT_SOURCE_DIR) + "/" + rel; }

class TempDir : public testing::PrefixedTempDir {
 public:
  TempDir() : PrefixedTempDir("grassaudit-infer") {}
};

// The error line infer_model_inputs throws, or "" when it infers.
std::string error_of(const std::string& path, int64_t time_axis = 1, const StreamingOptions& streaming = {}) {
  try {
    (void)infer_model_inputs(path, time_axis, streaming);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// ---- ONNX ------------------------------------------------------------------------------------

// Every fixture the generator wrote, with the --input kinds it declares (streaming models: their
// states bound by --state; a const input is the one thing the file cannot say).
TEST(InputInference, EveryOnnxFixtureAsItsManifestDeclares) {
  std::ifstream in(source("tests/fixtures/onnx/manifest.json"));
  ASSERT_TRUE(in) << "no manifest";
  const auto manifest = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& m : manifest["models"]) {
    const std::string file = source("tests/fixtures/onnx/" + m["file"].get<std::string>());
    SCOPED_TRACE(file);
    StreamingOptions streaming;
    std::vector<std::string> want;
    bool has_const = false;
    for (const auto& i : m["inputs"]) {
      const std::string kind = i["kind"].get<std::string>(), name = i["name"].get<std::string>();
      if (kind == "state") streaming.state.emplace_back(name, name + "_out");
      else if (kind.rfind("const:", 0) == 0) has_const = true;
      else want.push_back(name + "=" + kind);
    }
    if (has_const) {
      const std::string e = error_of(file, 1, streaming);
      EXPECT_NE(e.find("cannot infer the inputs: x (float32 [?, 4, 4]: features:4), sr (int64 []: pass --input "
                       "sr=const:VALUE); pass one --input per input"),
                std::string::npos)
          << e;
      continue;
    }
    EXPECT_EQ(describe_bindings(infer_model_inputs(file, 1, streaming)), fmt::format("{}", fmt::join(want, ", ")));
    ++checked;
  }
  EXPECT_GE(checked, 17);
}

struct OnnxGraph {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  OnnxGraph() {
    m.set_ir_version(8);
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(17);
    g = m.mutable_graph();
    g->set_name("infer");
  }
  // dims: a number, or -1 for a symbolic dimension; `shaped` false: no shape at all.
  void input(const std::string& name, int elem, const std::vector<int64_t>& dims, bool shaped = true) {
    auto* v = g->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    if (!shaped) return;
    auto* s = tt->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) s->add_dim()->set_dim_param("sym" + std::to_string(s->dim_size()));
      else s->add_dim()->set_dim_value(d);
    }
  }
  void output(const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(op + std::to_string(g->node_size()));
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  void table(const std::string& name, int64_t rows, int64_t cols) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(rows);
    t->add_dims(cols);
    t->set_raw_data(std::string(static_cast<size_t>(rows * cols * 4), '\0'));
  }
  std::string write(const TempDir& t, const std::string& rel) const { return t.write(rel, m.SerializeAsString()); }
};

// int32 ids cast to int64 before the Gather (tf2onnx writes this), a bool attention mask.
TEST(InputInference, OnnxGatherThroughACastAndABoolMask) {
  TempDir t;
  OnnxGraph gr;
  gr.input("input_ids", onnx::TensorProto::INT32, {-1, -1});
  gr.input("attention_mask", onnx::TensorProto::BOOL, {-1, -1});
  gr.table("wte", 7, 4);
  auto* cast = gr.node("Cast", {"input_ids"}, {"ids64"});
  auto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::INT64);
  gr.node("Gather", {"wte", "ids64"}, {"y"});
  gr.node("Not", {"attention_mask"}, {"masked"});
  gr.output("y");
  gr.output("masked");
  const auto b = infer_model_inputs(gr.write(t, "m.onnx"));
  EXPECT_EQ(describe_bindings(b), "input_ids=tokens:7, attention_mask=ones");
}

// A Gather of another axis, or on a table that is an input (not held by the file), says nothing.
TEST(InputInference, OnnxWithoutEnoughIsOneLineNamingEachInput) {
  TempDir t;
  OnnxGraph gr;
  gr.input("ids", onnx::TensorProto::INT64, {-1, -1});
  gr.input("table", onnx::TensorProto::FLOAT, {-1, 4});
  gr.input("x", onnx::TensorProto::FLOAT, {-1, -1, -1});
  gr.input("y", onnx::TensorProto::FLOAT, {}, /*shaped=*/false);
  gr.table("w", 9, 4);
  auto* g = gr.node("Gather", {"w", "ids"}, {"cols"});
  auto* axis = g->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  gr.node("Gather", {"table", "ids"}, {"rows"});
  gr.node("Add", {"x", "y"}, {"s"});
  gr.output("cols");
  gr.output("rows");
  gr.output("s");
  const std::string path = gr.write(t, "m.onnx");
  EXPECT_EQ(error_of(path),
            path + ": cannot infer the inputs: ids (int64 [?, ?]: pass --input ids=tokens:V), table (float32 [?, 4]: "
                   "pass --input table=features:C), x (float32 [?, ?, ?]: pass --input x=features:C), y (float32 shape "
                   "not declared: pass --input y=features:C); pass one --input per input");
  // The same table read on axis 0 is a vocabulary; x's C declared makes it features.
  gr.g->mutable_node(0)->clear_attribute();
  gr.g->mutable_input(2)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_value(3);
  const std::string e = error_of(gr.write(t, "m2.onnx"));
  EXPECT_NE(e.find("ids (int64 [?, ?]: tokens:9), table (float32 [?, 4]: pass --input table=features:C), "
                   "x (float32 [?, ?, 3]: features:3), y"),
            std::string::npos)
      << e;
}

// --time-axis 2: [B, C, T], C is dimension 1.
TEST(InputInference, OnnxChannelsFirstAtTimeAxisTwo) {
  TempDir t;
  OnnxGraph gr;
  gr.input("audio", onnx::TensorProto::FLOAT, {-1, 2, -1});
  gr.node("Neg", {"audio"}, {"y"});
  gr.output("y");
  const std::string path = gr.write(t, "m.onnx");
  EXPECT_EQ(describe_bindings(infer_model_inputs(path, 2)), "audio=features:2");
  EXPECT_NE(error_of(path, 1).find("audio (float32 [?, 2, ?]: pass --input audio=features:C)"), std::string::npos);
}

// ---- torch.export ----------------------------------------------------------------------------

TEST(InputInference, ExportEmbeddingMaskAndFeatures) {
  EXPECT_EQ(describe_bindings(infer_model_inputs(source("audits/export/gpt_block.pt2"))), "ids=tokens:64");
  EXPECT_EQ(describe_bindings(infer_model_inputs(source("audits/export/gpt_block_packaged.pt2"))), "ids=tokens:64");
  EXPECT_EQ(describe_bindings(infer_model_inputs(source("audits/export/two_inputs_dict.pt2"))),
            "ids=tokens:64, attention_mask=ones");
  EXPECT_EQ(describe_bindings(infer_model_inputs(source("audits/export/features_gpt_block.pt2"))), "x=features:4");
}

// ---- TorchScript -----------------------------------------------------------------------------

std::string save(const TempDir& t, torch::jit::Module& m, const std::string& rel) {
  const std::string path = t.file(rel);
  m.save(path);
  return path;
}

TEST(InputInference, TorchScriptEmbeddingAndMask) {
  TempDir t;
  torch::jit::Module m("Lm");
  m.register_parameter("table", at::randn({11, 4}), false);
  m.define(R"(
def forward(self, input_ids, attention_mask):
    L = input_ids.size(1)
    return torch.embedding(self.table, input_ids) * attention_mask.unsqueeze(-1) + float(L)
)");
  EXPECT_EQ(describe_bindings(infer_model_inputs(save(t, m, "lm.pt"))), "input_ids=tokens:11, attention_mask=ones");
}

TEST(InputInference, TorchScriptLinearInASubmoduleAndDefaultsLeftOut) {
  TempDir t;
  torch::jit::Module lin("Lin");
  lin.register_parameter("weight", at::randn({6, 9}), false);
  lin.define(R"(
def forward(self, x):
    return torch.linear(x, self.weight)
)");
  torch::jit::Module m("Net");
  m.register_module("lin", lin);
  m.define(R"(
def forward(self, x, scale: Optional[Tensor] = None):
    h = self.lin.forward(x)
    if scale is not None:
        h = h * scale
    return h
)");
  EXPECT_EQ(describe_bindings(infer_model_inputs(save(t, m, "net.pt"))), "x=features:9");
}

TEST(InputInference, TorchScriptTimeMovedLastThenPadAndConv) {
  TempDir t;
  torch::jit::Module m("Conv");
  m.register_parameter("w", at::randn({8, 3, 2}), false);
  m.define(R"(
def forward(self, x):
    h = torch.constant_pad_nd(x.transpose(1, 2), [1, 0])
    return torch.conv1d(h, self.w).transpose(1, 2)
)");
  const std::string path = save(t, m, "conv.pt");
  EXPECT_EQ(describe_bindings(infer_model_inputs(path)), "x=features:3");
  // Read as [B, C, T] (--time-axis 2) the first op moves C last: that is not a conv's input.
  EXPECT_NE(error_of(path, 2).find("x (Tensor; dtype and shape not declared: pass --input x=tokens:V or "
                                   "x=features:C)"),
            std::string::npos);

  torch::jit::Module ln("Norm");
  ln.define(R"(
def forward(self, x):
    return torch.layer_norm(x, [5])
)");
  EXPECT_EQ(describe_bindings(infer_model_inputs(save(t, ln, "ln.pt"))), "x=features:5");
}

// The first op that reads x decides, or nothing does: an add before the linear says nothing.
TEST(InputInference, TorchScriptWithoutEnoughIsOneLine) {
  TempDir t;
  torch::jit::Module m("AddFirst");
  m.register_parameter("weight", at::randn({6, 9}), false);
  m.define(R"(
def forward(self, x, mask):
    return torch.linear(x + 1.0, self.weight) * mask
)");
  const std::string path = save(t, m, "add_first.pt");
  EXPECT_EQ(error_of(path), path + ": cannot infer the inputs: x (Tensor; dtype and shape not declared: pass --input "
                                   "x=tokens:V or x=features:C), mask (Tensor; dtype and shape not declared: ones); "
                                   "pass one --input per input");
  // The CLI's fixtures: a cumulative mean says nothing; a Linear(8, 4) says features:8.
  const std::string ok = source("tests/cli/fixtures/ok_causal.pt");
  EXPECT_NE(error_of(ok).find("ok_causal.pt: cannot infer the inputs: x (Tensor; dtype and shape not declared"),
            std::string::npos);
  EXPECT_EQ(describe_bindings(infer_model_inputs(source("tests/cli/fixtures/wrong_channels.pt"))), "x=features:8");
}

// ---- the suites ------------------------------------------------------------------------------

// Every model file of every suite, inferred where it can be: a tokens or features input found must
// be what the suite feeds it (its vocabulary, its width). A suite may perturb a mask the file only
// names (attention_mask=tokens:2), so a mask inferred as ones is not compared.
TEST(InputInference, NeverContradictsASuite) {
  int inferred = 0, compared = 0, refused = 0;
  std::set<std::string> seen;
  for (const char* suite : {"controls", "signature", "torch2", "soundness", "layers", "export", "onnx", "incremental"}) {
    std::ifstream in(source(std::string("audits/") + suite + ".json"));
    ASSERT_TRUE(in) << suite;
    const auto j = nlohmann::json::parse(in);
    for (const auto& c : j["cases"]) {
      if (!c.contains("model")) continue;  // a built-in model
      const std::string model = source("audits/" + c["model"].get<std::string>());
      const int64_t time_axis = c.value("time_axis", int64_t{1});
      if (!seen.insert(model + "@" + std::to_string(time_axis)).second) continue;
      SCOPED_TRACE(model);
      std::vector<std::string> given;
      if (c.contains("input")) given.push_back(c["input"].get<std::string>());
      if (c.contains("inputs"))
        for (const auto& i : c["inputs"]) given.push_back(i.get<std::string>());
      StreamingOptions streaming;
      if (c.contains("state"))
        for (const auto& p : c["state"]) streaming.state.push_back(StreamingOptions::parse_pair(p.get<std::string>()));
      std::vector<InputBinding> found;
      try {
        found = infer_model_inputs(model, time_axis, streaming);
      } catch (const InputError& e) {
        ++refused;
        EXPECT_NE(std::string(e.what()).find("cannot infer the inputs: "), std::string::npos) << e.what();
        continue;
      }
      ++inferred;
      // Given inputs bind by NAME, or in order to the next argument not yet bound.
      std::vector<bool> bound(found.size(), false);
      for (const auto& text : given) {
        const InputBinding g = InputBinding::parse(text);
        size_t at = 0;
        if (!g.name.empty()) {
          while (at < found.size() && found[at].name != g.name) ++at;
        } else {
          while (at < found.size() && bound[at]) ++at;
        }
        ASSERT_LT(at, found.size()) << text << " binds no inferred input: " << describe_bindings(found);
        bound[at] = true;
        const InputBinding& f = found[at];
        // A mask held at ones, or an input the suite holds fixed on purpose (it perturbs one kind
        // of input per model): nothing to contradict.
        if (f.kind == InputBinding::Kind::kOnes || !g.perturbed()) continue;
        EXPECT_EQ(binding_kind(f), binding_kind(g)) << f.name;
        ++compared;
      }
    }
  }
  std::cout << "inferred " << inferred << " model files (" << compared << " inputs compared), " << refused
            << " refused with the one line\n";
  EXPECT_GE(inferred, 60);
}

// A file of no format is refused as open_model_file refuses it, before any inference.
TEST(InputInference, NotAModelFileIsTheOpenersLine) {
  TempDir t;
  const std::string missing = t.file("missing.pt");
  EXPECT_NE(error_of(missing).find("missing.pt"), std::string::npos);
  const std::string text = t.write("text.pt", "not a model");
  EXPECT_NE(error_of(text).find("text.pt"), std::string::npos);
  EXPECT_EQ(error_of(text).find("cannot infer"), std::string::npos);
}

}  // namespace
}  // namespace grassaudit
