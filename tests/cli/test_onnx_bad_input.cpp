// Bad ONNX files through `audit --model`: bytes that are not a ModelProto, a truncated model, an
// initializer of the wrong byte size, a graph input left unbound, external data that is missing or
// lies outside the model's folder, an op or domain the reader does not run, an opset before 7, a
// node asking for an enormous tensor, a Loop that never stops.
// Each ends in one line "grassaudit audit: error: <file>: ..." naming the problem, exit 2, and no
// --json written. The broken models are built here with libonnx's protobuf classes, each from one
// model that audits (y = x + W), so each differs from a good file by its one defect.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "cli_support.h"

namespace grassaudit::clitest {
namespace {

void add_tensor_value(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_param("time");
  shape->add_dim()->set_dim_value(4);
}

// y = x + W: x float [batch, time, 4], W float [4] (inline zeros), opset 17.
onnx::ModelProto add_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("grassaudit tests");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("add");
  add_tensor_value(g->add_input(), "x");
  add_tensor_value(g->add_output(), "y");
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_raw_data(std::string(16, '\0'));
  auto* n = g->add_node();
  n->set_name("add");
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("W");
  n->add_output("y");
  return m;
}

// W read from the external file `location` (16 bytes at offset 0).
onnx::ModelProto external_model(const std::string& location) {
  onnx::ModelProto m = add_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"location", location}, {"offset", "0"}, {"length", "16"}}) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  return m;
}

// An int64 initializer `name` holding `values` (1-D).
void add_ints(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

std::string write_model(const TempDir& t, const std::string& rel, const onnx::ModelProto& m) {
  std::string bytes;
  if (!m.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize " + rel);
  write_text(t.file(rel), bytes);
  return t.file(rel);
}

std::vector<std::string> audit_args(const std::string& model, const std::string& json,
                                    std::vector<std::string> inputs = {"--input", "x=features:4"}) {
  std::vector<std::string> args{"audit", "--model", model};
  args.insert(args.end(), inputs.begin(), inputs.end());
  for (const char* a : {"--seq-len", "8", "--trials", "1", "--threads", "1", "--json"}) args.push_back(a);
  args.push_back(json);
  return args;
}

struct BadOnnx {
  std::string file;  // relative to the test's folder
  std::vector<std::string> needles;
  std::vector<std::string> inputs = {"--input", "x=features:4"};
};

TEST(CliOnnxBadInput, EachDefectIsOneLineAndNoReport) {
  GRASSAUDIT_CLI_REQUIRE_BINARY();
  TempDir t;
  Cli cli(t);
  const std::string secret(16, '\x01');
  write_text(t.file("secret.bin"), secret);
  write_text(t.file("models/weights.bin"), std::string(16, '\0'));

  // The good models the broken ones are cut from audit (inline weights, and external data inside
  // the model's folder), so each failure below is its one defect.
  for (const std::string& good : {write_model(t, "models/good.onnx", add_model()),
                                  write_model(t, "models/external_ok.onnx", external_model("weights.bin"))}) {
    SCOPED_TRACE(good);
    const auto r = cli.run(audit_args(good, t.file("good.json")));
    ASSERT_EQ(r.status, 0) << show(r);
    EXPECT_TRUE(fs::exists(t.file("good.json")));
    fs::remove(t.file("good.json"));
  }

  // Not a protobuf, though its first byte (0x08: ir_version's tag) says ONNX.
  write_text(t.file("models/not_protobuf.onnx"), std::string("\x08", 1) + " this is not a model\n");
  // A real model cut in half.
  const std::string real = read_text(std::string(GRASSAUDIT_SOURCE_DIR) + "/tests/fixtures/onnx/conv_same.onnx");
  write_text(t.file("models/truncated.onnx"), real.substr(0, real.size() / 2));
  {  // W [4] float holds 12 bytes, not 16
    onnx::ModelProto m = add_model();
    m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(12, '\0'));
    write_model(t, "models/short_initializer.onnx", m);
  }
  write_model(t, "models/external_missing.onnx", external_model("missing.bin"));
  write_model(t, "models/external_parent.onnx", external_model("../secret.bin"));
  write_model(t, "models/external_absolute.onnx", external_model(t.file("secret.bin")));
  {  // an op of the default domain the reader does not run
    onnx::ModelProto m = add_model();
    m.mutable_graph()->mutable_node(0)->set_op_type("NonMaxSuppression");
    write_model(t, "models/unknown_op.onnx", m);
  }
  {  // a node of a custom domain (ONNX Runtime's contrib ops)
    onnx::ModelProto m = add_model();
    auto* opset = m.add_opset_import();
    opset->set_domain("com.microsoft");
    opset->set_version(1);
    m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
    m.mutable_graph()->mutable_node(0)->set_op_type("FusedMatMul");
    write_model(t, "models/custom_domain.onnx", m);
  }
  {  // opset 6: before numpy broadcasting reached every op
    onnx::ModelProto m = add_model();
    m.mutable_opset_import(0)->set_version(6);
    write_model(t, "models/opset6.onnx", m);
  }
  {  // y = x + ConstantOfShape([2^40]): a node asking for 2^40 elements
    onnx::ModelProto m = add_model();
    auto* g = m.mutable_graph();
    add_ints(g, "huge_shape", {int64_t{1} << 40});
    auto* n = g->add_node();
    n->set_name("fill");
    n->set_op_type("ConstantOfShape");
    n->add_input("huge_shape");
    n->add_output("filled");
    g->mutable_node()->SwapElements(0, 1);
    g->mutable_node(1)->set_input(1, "filled");
    write_model(t, "models/enormous_output.onnx", m);
  }
  {  // y = Loop(x) whose condition never turns false and with no trip count
    onnx::ModelProto m = add_model();
    auto* g = m.mutable_graph();
    auto* cond = g->add_initializer();
    cond->set_name("forever");
    cond->set_data_type(onnx::TensorProto::BOOL);
    cond->add_int32_data(1);
    auto* n = g->mutable_node(0);
    n->Clear();
    n->set_name("spin");
    n->set_op_type("Loop");
    n->add_input("");
    n->add_input("forever");
    n->add_input("x");
    n->add_output("y");
    auto* a = n->add_attribute();
    a->set_name("body");
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* body = a->mutable_g();
    body->set_name("body");
    for (auto [name, type] : {std::pair{"i", onnx::TensorProto::INT64}, std::pair{"c", onnx::TensorProto::BOOL},
                              std::pair{"v", onnx::TensorProto::FLOAT}}) {
      auto* in = body->add_input();
      in->set_name(name);
      in->mutable_type()->mutable_tensor_type()->set_elem_type(type);
    }
    for (const char* name : {"c_out", "v_out"}) body->add_output()->set_name(name);
    for (auto [in, out] : {std::pair{"c", "c_out"}, std::pair{"v", "v_out"}}) {
      auto* id = body->add_node();
      id->set_op_type("Identity");
      id->add_input(in);
      id->add_output(out);
    }
    write_model(t, "models/endless_loop.onnx", m);
  }
  const std::string two_inputs = std::string(GRASSAUDIT_SOURCE_DIR) + "/tests/fixtures/onnx/two_inputs.onnx";

  const std::vector<BadOnnx> cases{
      {"models/not_protobuf.onnx", {"not_protobuf.onnx", "not an ONNX model"}},
      {"models/truncated.onnx", {"truncated.onnx", "not an ONNX model", "truncated"}},
      {"models/short_initializer.onnx", {"short_initializer.onnx", "tensor 'W'", "holds 12 bytes, its shape needs 16"}},
      {two_inputs, {"two_inputs.onnx", "features"}, {"--input", "ids=tokens:50"}},
      {"models/external_missing.onnx", {"external_missing.onnx", "'missing.bin' is missing"}},
      {"models/external_parent.onnx", {"external_parent.onnx", "'../secret.bin' points outside the model's folder"}},
      {"models/external_absolute.onnx", {"external_absolute.onnx", "secret.bin' points outside the model's folder"}},
      {"models/unknown_op.onnx", {"unknown_op.onnx", "op NonMaxSuppression", "is not one this reader runs"}},
      {"models/custom_domain.onnx", {"custom_domain.onnx", "domain 'com.microsoft' is not one this reader runs"}},
      {"models/opset6.onnx", {"opset6.onnx", "opset 6 of the default domain is not one this reader runs"}},
      {"models/enormous_output.onnx", {"enormous_output.onnx", "'fill' (ConstantOfShape)", "[1099511627776]", "over the"}},
      {"models/endless_loop.onnx", {"endless_loop.onnx", "'spin' (Loop)", "calls sub-graphs", "over 1048576 times"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string model = c.file.front() == '/' ? c.file : t.file(c.file);
    const auto before = list_files(t.path());
    const auto r = cli.run(audit_args(model, t.file("r.json"), c.inputs));
    EXPECT_TRUE(IsOneLineError(r, "audit", c.needles));
    EXPECT_FALSE(fs::exists(t.file("r.json")));
    EXPECT_EQ(list_files(t.path()), before);  // nothing half-written beside it either
    EXPECT_TRUE(NoTempFiles(t.path()));
  }
  EXPECT_EQ(read_text(t.file("secret.bin")), secret);
}

}  // namespace
}  // namespace grassaudit::clitest
