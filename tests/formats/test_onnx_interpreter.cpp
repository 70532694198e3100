// The ONNX interpreter's shortcuts against the plain ATen arithmetic they stand for: a MatMul
// whose one reader adds a weight runs as one addmm, elementwise ops write into intermediates
// nothing else reads (and never into anything another node, a view, an input or a weight still
// holds), LayerNormalization runs ATen's kernel. Small graphs written here as ModelProtos.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "formats/onnx/onnx_program.h"
#include "util/error.h"

using grassaudit::onnx_rt::OnnxProgram;

namespace {

struct Graph {
  onnx::ModelProto m;
  onnx::GraphProto* g;

  explicit Graph(int64_t opset = 17) {
    m.set_ir_version(8);
    auto* os = m.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    g = m.mutable_graph();
    g->set_name("test");
  }
  void input(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* v = g->add_input();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void output(const std::string& name) {
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g->node_size()));
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  // t: float32 or int64, written as raw data.
  void weight(const std::string& name, const at::Tensor& t) {
    auto* p = g->add_initializer();
    p->set_name(name);
    const at::Tensor c = t.contiguous();
    p->set_data_type(c.scalar_type() == at::kLong ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (int64_t d : c.sizes()) p->add_dims(d);
    p->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
  }
  std::unique_ptr<OnnxProgram> load() const { return OnnxProgram::from_bytes(m.SerializeAsString(), ""); }
};

void expect_close(const at::Tensor& want, const at::Tensor& got, double tol = 1e-6) {
  ASSERT_EQ(want.sizes(), got.sizes());
  EXPECT_TRUE(at::allclose(got, want, tol, tol)) << "largest error " << (got - want).abs().max().item<double>();
}

}  // namespace

TEST(OnnxInterpreter, MatMulThenAddOfAWeightIsTheSumOfBoth) {
  const at::Tensor w = at::randn({4, 5}), b = at::randn({5}), b2 = at::randn({1, 5});
  for (int variant = 0; variant < 4; ++variant) {
    // 0: Add(bias, P); 1: Add(P, bias); 2: P is also a graph output; 3: a [1, 5] bias
    Graph gr;
    gr.input("x");
    gr.weight("w", w);
    gr.weight("b", variant == 3 ? b2 : b);
    gr.node("MatMul", {"x", "w"}, {"p"});
    gr.node("Add", variant == 0 ? std::vector<std::string>{"b", "p"} : std::vector<std::string>{"p", "b"}, {"y"});
    gr.output("y");
    if (variant == 2) gr.output("p");
    auto prog = gr.load();
    for (const at::Tensor& x : {at::randn({2, 3, 4}), at::randn({3, 4}), at::randn({2, 2, 3, 4})}) {
      SCOPED_TRACE(variant);
      const auto out = prog->run_all({x});
      expect_close(at::matmul(x, w) + (variant == 3 ? b2 : b), out[0], 1e-5);
      if (variant == 2) expect_close(at::matmul(x, w), out[1], 1e-5);
    }
  }
}

TEST(OnnxInterpreter, OpsWriteOnlyIntoWhatNothingElseHolds) {
  Graph gr;
  gr.input("x");
  gr.input("mask", onnx::TensorProto::BOOL);
  gr.weight("sqrt2", at::scalar_tensor(std::sqrt(2.0), at::kFloat));
  gr.weight("one", at::scalar_tensor(1.0, at::kFloat));
  gr.weight("half", at::scalar_tensor(0.5, at::kFloat));
  gr.weight("two", at::scalar_tensor(2.0, at::kFloat));
  gr.weight("ninf", at::scalar_tensor(-INFINITY, at::kFloat));
  gr.weight("flat", at::tensor(std::vector<int64_t>{-1}, at::kLong));
  // GELU as exporters write it: d is read twice (Erf and Neg), so Erf must not overwrite it.
  gr.node("Div", {"x", "sqrt2"}, {"d"});
  gr.node("Erf", {"d"}, {"e"});
  gr.node("Add", {"e", "one"}, {"p"});
  gr.node("Mul", {"x", "p"}, {"m"});
  gr.node("Mul", {"m", "half"}, {"gelu"});
  gr.node("Neg", {"d"}, {"neg_d"});
  // A view of t is negated while t itself is read later: the view must not be overwritten.
  gr.node("Mul", {"x", "two"}, {"t"});
  gr.node("Reshape", {"t", "flat"}, {"t_flat"});
  gr.node("Neg", {"t_flat"}, {"neg_t"});
  gr.node("Sub", {"t", "x"}, {"t_minus_x"});
  // One node reading a slot twice.
  gr.node("Sigmoid", {"x"}, {"s"});
  gr.node("Mul", {"s", "s"}, {"s2"});
  // A masked fill of an intermediate.
  gr.node("Mul", {"x", "two"}, {"u"});
  gr.node("Where", {"mask", "ninf", "u"}, {"filled"});
  for (const char* o : {"gelu", "neg_d", "neg_t", "t_minus_x", "s2", "filled"}) gr.output(o);
  auto prog = gr.load();
  const at::Tensor x = at::randn({2, 3, 4}), mask = at::rand({3, 4}) > 0.5;
  const at::Tensor x_before = x.clone();
  const auto first = prog->run_all({x, mask});
  const auto second = prog->run_all({x, mask});
  EXPECT_TRUE(at::equal(x, x_before)) << "the caller's input was written";
  ASSERT_EQ(first.size(), 6u);
  expect_close(0.5 * x * (1 + at::erf(x / std::sqrt(2.0))), first[0]);
  expect_close(-x / std::sqrt(2.0), first[1]);
  expect_close(-2 * x.reshape({-1}), first[2]);
  expect_close(x, first[3]);
  expect_close(at::sigmoid(x) * at::sigmoid(x), first[4]);
  expect_close(at::where(mask, at::full({}, -INFINITY), 2 * x), first[5]);
  for (size_t k = 0; k < first.size(); ++k) EXPECT_TRUE(at::equal(first[k], second[k])) << "output " << k << " moved between runs";
}

TEST(OnnxInterpreter, LayerNormalizationGivesTheSpecsOutputs) {
  const at::Tensor scale = at::randn({4}), bias = at::randn({4});
  for (const bool broadcast_scale : {false, true}) {
    Graph gr;
    gr.input("x");
    gr.weight("scale", broadcast_scale ? scale.narrow(0, 0, 1) : scale);
    gr.weight("bias", bias);
    gr.node("LayerNormalization", {"x", "scale", "bias"}, {"y", "mean", "inv"})->add_attribute()->CopyFrom([] {
      onnx::AttributeProto a;
      a.set_name("epsilon");
      a.set_type(onnx::AttributeProto::FLOAT);
      a.set_f(1e-3f);
      return a;
    }());
    for (const char* o : {"y", "mean", "inv"}) gr.output(o);
    const at::Tensor x = at::randn({2, 3, 4});
    const auto out = gr.load()->run_all({x});
    const at::Tensor mean = x.mean({-1}, true), inv = at::rsqrt((x - mean).pow(2).mean({-1}, true) + 1e-3);
    const at::Tensor s = broadcast_scale ? scale.narrow(0, 0, 1) : scale;
    expect_close((x - mean) * inv * s + bias, out[0], 1e-5);
    expect_close(mean, out[1], 1e-5);
    expect_close(inv, out[2], 1e-5);
  }
}

TEST(OnnxInterpreter, GeluReadsItsApproximation) {
  if (OnnxProgram::newest_opset() < 20) GTEST_SKIP() << "this libonnx knows no Gelu (opset 20)";
  for (const std::string approx : {"none", "tanh"}) {
    Graph gr(20);
    gr.input("x");
    auto* a = gr.node("Gelu", {"x"}, {"y"})->add_attribute();
    a->set_name("approximate");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(approx);
    gr.output("y");
    const at::Tensor x = at::randn({3, 5});
    const at::Tensor want = approx == "tanh"
                                ? 0.5 * x * (1 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3))))
                                : 0.5 * x * (1 + at::erf(x / std::sqrt(2.0)));
    expect_close(want, gr.load()->run_all({x})[0], 1e-5);
  }
}

// A sequence that cannot be what the graph asks of it is one line naming the node: tensors of two
// element types, an empty sequence concatenated, a position past the end, a sequence where a
// tensor op reads. The same graphs with good values give torch.cat / the element.
TEST(OnnxInterpreter, BadSequencesAreOneLineNamingTheNode) {
  auto run = [](const std::function<void(Graph&)>& build, const std::vector<at::Tensor>& in) {
    Graph gr;
    gr.input("x");
    gr.input("i", onnx::TensorProto::INT64);
    build(gr);
    gr.output("y");
    return gr.load()->run_all(in)[0];
  };
  const at::Tensor x = at::randn({2, 3});
  auto error_of = [&](const std::function<void(Graph&)>& build, const std::vector<at::Tensor>& in) -> std::string {
    try {
      run(build, in);
    } catch (const grassaudit::InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    return "no error";
  };
  auto concat = [](Graph& gr) {
    gr.node("SequenceConstruct", {"x", "x"}, {"s"});
    auto* c = gr.node("ConcatFromSequence", {"s"}, {"y"});
    auto* a = c->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
  };
  const at::Tensor i0 = at::scalar_tensor(int64_t{0}, at::kLong);
  expect_close(at::cat({x, x}, 1), run(concat, {x, i0}));
  auto at_pos = [](Graph& gr) {
    gr.node("SequenceConstruct", {"x", "x"}, {"s"});
    gr.node("SequenceAt", {"s", "i"}, {"y"});
  };
  expect_close(x, run(at_pos, {x, at::scalar_tensor(int64_t{-2}, at::kLong)}));
  EXPECT_NE(error_of(at_pos, {x, at::scalar_tensor(int64_t{2}, at::kLong)}).find("SequenceAt_2"), std::string::npos);
  EXPECT_NE(error_of(at_pos, {x, at::scalar_tensor(int64_t{2}, at::kLong)}).find("position 2 is outside a sequence of 2"),
            std::string::npos);
  const std::string mixed = error_of(
      [](Graph& gr) {
        gr.node("Cast", {"x"}, {"d"})->add_attribute()->CopyFrom([] {
          onnx::AttributeProto a;
          a.set_name("to");
          a.set_type(onnx::AttributeProto::INT);
          a.set_i(onnx::TensorProto::DOUBLE);
          return a;
        }());
        gr.node("SequenceConstruct", {"x"}, {"s"});
        gr.node("SequenceInsert", {"s", "d"}, {"s2"});
        gr.node("SequenceAt", {"s2", "i"}, {"y"});
      },
      {x, i0});
  EXPECT_NE(mixed.find("SequenceInsert_3"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("cannot join a sequence of Float"), std::string::npos) << mixed;
  const std::string empty = error_of(
      [](Graph& gr) {
        gr.node("SequenceEmpty", {}, {"s"});
        auto* c = gr.node("ConcatFromSequence", {"s"}, {"c"});
        auto* a = c->add_attribute();
        a->set_name("axis");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(0);
        gr.node("Add", {"x", "c"}, {"y"});
      },
      {x, i0});
  EXPECT_NE(empty.find("ConcatFromSequence_2"), std::string::npos) << empty;
  EXPECT_NE(empty.find("empty sequence"), std::string::npos) << empty;
  const std::string as_tensor = error_of(
      [](Graph& gr) {
        gr.node("SequenceConstruct", {"x"}, {"s"});
        gr.node("Add", {"x", "s"}, {"y"});
      },
      {x, i0});
  EXPECT_NE(as_tensor.find("is a sequence; Add takes tensors"), std::string::npos) << as_tensor;
}
