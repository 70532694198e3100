// The ONNX interpreter's LSTM, GRU and RNN (src/formats/onnx/onnx_ops_rnn.cpp): against ONNX's own
// node tests (libonnx-testdata: recorded inputs and outputs, ONNX's tolerances rtol 1e-3 and atol
// 1e-7), against ATen's own at::lstm / at::gru / at::rnn_tanh on random weights (both directions,
// reverse, per-row lengths through packed sequences, both layouts, float32 and float64), and one
// step of each activation against its formula.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "formats/onnx/onnx_op.h"
#include "formats/onnx/onnx_tensor.h"
#include "util/error.h"

using namespace grassaudit;
using namespace grassaudit::onnx_rt;
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

at::Tensor read_tensor(const fs::path& p) {
  onnx::TensorProto t;
  if (!t.ParseFromString(read_bytes(p))) throw std::runtime_error("does not parse: " + p.string());
  return tensor_from_proto(t, p.parent_path().string(), [](const std::string& why) { throw std::runtime_error(why); });
}

// ONNX's node tests, where ONNX_TESTDATA or Debian's libonnx-testdata puts them ("" when absent).
fs::path node_test_dir() {
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("ONNX_TESTDATA")) roots.emplace_back(env);
  roots.emplace_back("/usr/lib/python3/dist-packages/onnx/backend/test/data");
  roots.emplace_back("/usr/share/onnx/backend/test/data");
  for (const fs::path& r : roots)
    if (fs::is_directory(r / "node")) return r / "node";
  return {};
}

bool is_recurrent_test(const std::string& name) {
  for (const char* prefix : {"test_lstm_", "test_gru_", "test_rnn_seq_length", "test_simple_rnn_"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

// Runs the node through the op table.
std::vector<at::Tensor> run_node(const onnx::NodeProto& node, std::vector<at::Tensor> inputs) {
  OpContext ctx(node, /*opset*/ 14, std::move(inputs), /*float64*/ false, nullptr);
  return op_table().at(node.op_type())(ctx);
}

// Empty when `got` matches `want` at rtol/atol (shape and dtype included), else why not.
std::string mismatch(const at::Tensor& got, const at::Tensor& want, double rtol, double atol) {
  if (!got.defined()) return "output undefined";
  if (got.sizes() != want.sizes())
    return fmt::format("shape {} != {}", fmt::join(got.sizes(), ","), fmt::join(want.sizes(), ","));
  if (got.scalar_type() != want.scalar_type())
    return fmt::format("dtype {} != {}", c10::toString(got.scalar_type()), c10::toString(want.scalar_type()));
  if (!at::allclose(got, want, rtol, atol)) {
    const at::Tensor diff = (got - want).abs().max();
    return fmt::format("max |diff| {}", diff.item<double>());
  }
  return "";
}

// Empty when the node test in `dir` passes through the op, else why not.
std::string run_node_test(const fs::path& dir) {
  onnx::ModelProto model;
  if (!model.ParseFromString(read_bytes(dir / "model.onnx"))) return "model.onnx does not parse";
  const onnx::GraphProto& g = model.graph();
  if (g.node_size() != 1) return fmt::format("{} nodes, expected 1", g.node_size());
  const onnx::NodeProto& node = g.node(0);
  if (!op_table().count(node.op_type())) return "no op " + node.op_type();
  int sets = 0;
  try {
    for (; fs::is_directory(dir / fmt::format("test_data_set_{}", sets)); ++sets) {
      const fs::path set = dir / fmt::format("test_data_set_{}", sets);
      std::map<std::string, at::Tensor> by_name;
      for (int i = 0; i < g.input_size(); ++i)
        by_name[g.input(i).name()] = read_tensor(set / fmt::format("input_{}.pb", i));
      std::vector<at::Tensor> inputs;
      for (const std::string& name : node.input()) inputs.push_back(name.empty() ? at::Tensor() : by_name.at(name));
      const std::vector<at::Tensor> got = run_node(node, inputs);
      // Each graph output is one of the node's named outputs.
      for (int o = 0; o < g.output_size(); ++o) {
        const auto it = std::find(node.output().begin(), node.output().end(), g.output(o).name());
        if (it == node.output().end()) return "graph output " + g.output(o).name() + " is not the node's";
        const size_t k = static_cast<size_t>(it - node.output().begin());
        if (k >= got.size()) return fmt::format("output {} missing", k);
        const std::string why = mismatch(got[k], read_tensor(set / fmt::format("output_{}.pb", o)), 1e-3, 1e-7);
        if (!why.empty()) return fmt::format("set {} output {}: {}", sets, g.output(o).name(), why);
      }
    }
  } catch (const std::exception& e) {
    return fmt::format("set {}: {}", sets, e.what());
  }
  return sets > 0 ? "" : "no test_data_set_0";
}

TEST(OnnxRnn, OnnxNodeTests) {
  const fs::path root = node_test_dir();
  if (root.empty()) GTEST_SKIP() << "no ONNX backend test data (libonnx-testdata)";
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && is_recurrent_test(e.path().filename().string())) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_FALSE(dirs.empty()) << "no LSTM/GRU/RNN node tests under " << root;
  size_t passed = 0;
  for (const fs::path& dir : dirs) {
    const std::string why = run_node_test(dir);
    EXPECT_EQ(why, "") << dir.filename().string();
    passed += why.empty();
  }
  std::cout << fmt::format("[ OnnxRnn ] {} of {} ONNX node tests pass\n", passed, dirs.size());
}

// ---- Cross-check against ATen's recurrent ops ----

enum class Kind { Lstm, Gru, Rnn };

int64_t gates_of(Kind k) { return k == Kind::Lstm ? 4 : k == Kind::Gru ? 3 : 1; }

void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float f : v) a->add_floats(f);
}

// ONNX's gate blocks (rows of hidden each, along dim 0) in PyTorch's order: LSTM iofc -> ifco
// (PyTorch's i, f, g, o), GRU zrh -> rzh (PyTorch's r, z, n).
at::Tensor to_torch_order(Kind k, const at::Tensor& t) {
  if (k == Kind::Rnn) return t;
  const auto blocks = t.chunk(gates_of(k), 0);
  if (k == Kind::Lstm) return at::cat({blocks[0], blocks[2], blocks[3], blocks[1]}, 0);
  return at::cat({blocks[1], blocks[0], blocks[2]}, 0);
}

struct CrossCase {
  Kind kind;
  std::string direction;
  bool lengths;  // rows of different lengths (packed sequences on ATen's side)
  int64_t layout;
  at::ScalarType dtype;
};

std::string describe(const CrossCase& c) {
  return fmt::format("{} {} lengths={} layout={} {}", c.kind == Kind::Lstm ? "LSTM" : c.kind == Kind::Gru ? "GRU" : "RNN",
                     c.direction, c.lengths, c.layout, c10::toString(c.dtype));
}

void cross_check(const CrossCase& cc) {
  SCOPED_TRACE(describe(cc));
  const int64_t seq = 5, batch = 2, input = 3, hidden = 4, G = gates_of(cc.kind);
  const int64_t dirs = cc.direction == "bidirectional" ? 2 : 1;
  const auto opt = at::TensorOptions().dtype(cc.dtype);
  at::manual_seed(static_cast<uint64_t>(std::hash<std::string>{}(describe(cc)) & 0xffff));
  const at::Tensor x = at::randn({seq, batch, input}, opt);  // time-major
  const at::Tensor w = at::randn({dirs, G * hidden, input}, opt) * 0.5;
  const at::Tensor r = at::randn({dirs, G * hidden, hidden}, opt) * 0.5;
  const at::Tensor b = at::randn({dirs, 2 * G * hidden}, opt) * 0.5;
  const at::Tensor h0 = at::randn({dirs, batch, hidden}, opt);
  const at::Tensor c0 = at::randn({dirs, batch, hidden}, opt);
  // Lengths in decreasing order, as packing wants.
  const at::Tensor lens = at::tensor(std::vector<int32_t>{static_cast<int32_t>(seq), static_cast<int32_t>(seq - 2)});

  // ONNX's side.
  onnx::NodeProto node;
  node.set_op_type(cc.kind == Kind::Lstm ? "LSTM" : cc.kind == Kind::Gru ? "GRU" : "RNN");
  for (const char* in : {"X", "W", "R", "B"}) node.add_input(in);
  node.add_input(cc.lengths ? "sequence_lens" : "");
  node.add_input("initial_h");
  if (cc.kind == Kind::Lstm) node.add_input("initial_c");
  node.add_output("Y");
  node.add_output("Y_h");
  if (cc.kind == Kind::Lstm) node.add_output("Y_c");
  set_attr(node, "hidden_size", hidden);
  set_attr(node, "direction", cc.direction);
  set_attr(node, "layout", cc.layout);
  if (cc.kind == Kind::Gru) set_attr(node, "linear_before_reset", int64_t{1});  // PyTorch's GRU
  const auto in_layout = [&](const at::Tensor& t) { return cc.layout == 1 ? t.transpose(0, 1).contiguous() : t; };
  std::vector<at::Tensor> inputs{in_layout(x), w, r, b, cc.lengths ? lens : at::Tensor(), in_layout(h0)};
  if (cc.kind == Kind::Lstm) inputs.push_back(in_layout(c0));
  const std::vector<at::Tensor> got = run_node(node, inputs);
  ASSERT_EQ(got.size(), cc.kind == Kind::Lstm ? 3u : 2u);

  // ATen's side: w_ih, w_hh, b_ih, b_hh per direction.
  std::vector<at::Tensor> params;
  for (int64_t d = 0; d < dirs; ++d) {
    params.push_back(to_torch_order(cc.kind, w[d]));
    params.push_back(to_torch_order(cc.kind, r[d]));
    params.push_back(to_torch_order(cc.kind, b[d].slice(0, 0, G * hidden)));
    params.push_back(to_torch_order(cc.kind, b[d].slice(0, G * hidden, 2 * G * hidden)));
  }
  // PyTorch has no reverse-only mode: run forward on each row's sequence reversed within its
  // length, then reverse the outputs back.
  const bool reverse = cc.direction == "reverse";
  const std::vector<int64_t> row_len = cc.lengths ? std::vector<int64_t>{seq, seq - 2} : std::vector<int64_t>{seq, seq};
  const auto flip_rows = [&](const at::Tensor& t) {  // t [seq, batch, ...]
    std::vector<at::Tensor> rows;
    for (int64_t bi = 0; bi < batch; ++bi) {
      const at::Tensor row = t.select(1, bi);
      const int64_t L = row_len[bi];
      rows.push_back(at::cat({row.slice(0, 0, L).flip({0}), row.slice(0, L, seq)}, 0));
    }
    return at::stack(rows, 1);
  };
  const at::Tensor xin = reverse ? flip_rows(x) : x;
  const bool bidir = dirs == 2;
  at::Tensor y, hn, cn;
  if (cc.lengths) {
    const auto packed = at::_pack_padded_sequence(xin, lens.to(at::kLong), /*batch_first*/ false);
    const at::Tensor data = std::get<0>(packed), sizes = std::get<1>(packed);
    at::Tensor ydata;
    if (cc.kind == Kind::Lstm)
      std::tie(ydata, hn, cn) = at::lstm(data, sizes, {h0, c0}, params, true, 1, 0.0, false, bidir);
    else if (cc.kind == Kind::Gru)
      std::tie(ydata, hn) = at::gru(data, sizes, h0, params, true, 1, 0.0, false, bidir);
    else
      std::tie(ydata, hn) = at::rnn_tanh(data, sizes, h0, params, true, 1, 0.0, false, bidir);
    y = std::get<0>(at::_pad_packed_sequence(ydata, sizes, false, 0.0, seq));
  } else if (cc.kind == Kind::Lstm) {
    std::tie(y, hn, cn) = at::lstm(xin, {h0, c0}, params, true, 1, 0.0, false, bidir, false);
  } else if (cc.kind == Kind::Gru) {
    std::tie(y, hn) = at::gru(xin, h0, params, true, 1, 0.0, false, bidir, false);
  } else {
    std::tie(y, hn) = at::rnn_tanh(xin, h0, params, true, 1, 0.0, false, bidir, false);
  }
  if (reverse) y = flip_rows(y);
  // ATen's y [seq, batch, dirs*hidden] as ONNX's [seq, dirs, batch, hidden].
  at::Tensor want_y = y.reshape({seq, batch, dirs, hidden}).permute({0, 2, 1, 3});
  at::Tensor want_h = hn, want_c = cn;
  if (cc.layout == 1) {
    want_y = want_y.permute({2, 0, 1, 3});
    want_h = want_h.transpose(0, 1);
    if (want_c.defined()) want_c = want_c.transpose(0, 1);
  }
  EXPECT_EQ(mismatch(got[0], want_y.contiguous(), 1e-5, 1e-6), "") << "Y";
  EXPECT_EQ(mismatch(got[1], want_h.contiguous(), 1e-5, 1e-6), "") << "Y_h";
  if (cc.kind == Kind::Lstm) EXPECT_EQ(mismatch(got[2], want_c.contiguous(), 1e-5, 1e-6), "") << "Y_c";
}

TEST(OnnxRnn, MatchesAtenRecurrentOps) {
  int cases = 0;
  for (Kind k : {Kind::Lstm, Kind::Gru, Kind::Rnn})
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (bool lengths : {false, true})
        for (int64_t layout : {0, 1})
          for (at::ScalarType dt : {at::kFloat, at::kDouble}) {
            cross_check({k, dir, lengths, layout, dt});
            ++cases;
          }
  EXPECT_EQ(cases, 72);
}

// One step (seq 1, zero state, no R contribution) of RNN with each activation against its formula;
// the second direction takes the alphas and betas the first leaves.
TEST(OnnxRnn, ActivationsAndTheirParameters) {
  struct Case {
    std::vector<std::string> acts;
    std::vector<float> alpha, beta;
    std::function<at::Tensor(const at::Tensor&)> fwd, bwd;
  };
  const auto where = [](const at::Tensor& c, const at::Tensor& a, const at::Tensor& b) { return at::where(c, a, b); };
  const std::vector<Case> cases{
      {{"Relu", "Tanh"}, {}, {}, [](auto v) { return at::relu(v); }, [](auto v) { return at::tanh(v); }},
      {{"Sigmoid", "Softsign"}, {}, {}, [](auto v) { return at::sigmoid(v); }, [](auto v) { return v / (1 + v.abs()); }},
      {{"Softplus", "Elu"}, {}, {}, [](auto v) { return at::log(1 + at::exp(v)); },
       [&](auto v) { return where(v >= 0, v, at::exp(v) - 1); }},
      {{"LeakyRelu", "HardSigmoid"}, {0.1f, 0.3f}, {0.4f}, [&](auto v) { return where(v >= 0, v, v * 0.1f); },
       [](auto v) { return at::clamp(v * 0.3f + 0.4f, 0.0, 1.0); }},
      {{"Affine", "ScaledTanh"}, {2.0f, 0.5f}, {-1.0f, 3.0f}, [](auto v) { return v * 2.0f - 1.0f; },
       [](auto v) { return at::tanh(v * 3.0f) * 0.5f; }},
      {{"ThresholdedRelu", "Elu"}, {0.25f, 0.7f}, {}, [&](auto v) { return where(v >= 0.25f, v, at::zeros_like(v)); },
       [&](auto v) { return where(v >= 0, v, (at::exp(v) - 1) * 0.7f); }},
      // Defaults once the lists run out: LeakyRelu 0.01, HardSigmoid 0.2 and 0.5.
      {{"LeakyRelu", "HardSigmoid"}, {}, {}, [&](auto v) { return where(v >= 0, v, v * 0.01); },
       [](auto v) { return at::clamp(v * 0.2 + 0.5, 0.0, 1.0); }},
  };
  at::manual_seed(7);
  const int64_t batch = 2, input = 3, hidden = 4;
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{}", fmt::join(c.acts, ",")));
    const at::Tensor x = at::randn({1, batch, input}, at::kDouble) * 3;
    const at::Tensor w = at::randn({2, hidden, input}, at::kDouble);
    const at::Tensor r = at::randn({2, hidden, hidden}, at::kDouble);
    const at::Tensor b = at::randn({2, 2 * hidden}, at::kDouble);
    onnx::NodeProto node;
    node.set_op_type("RNN");
    for (const char* in : {"X", "W", "R", "B"}) node.add_input(in);
    node.add_output("Y");
    set_attr(node, "direction", std::string("bidirectional"));
    set_attr(node, "activations", c.acts);
    if (!c.alpha.empty()) set_attr(node, "activation_alpha", c.alpha);
    if (!c.beta.empty()) set_attr(node, "activation_beta", c.beta);
    const at::Tensor y = run_node(node, {x, w, r, b})[0];  // [1, 2, batch, hidden]
    for (int64_t d = 0; d < 2; ++d) {
      const at::Tensor pre = at::matmul(x[0], w[d].t()) + b[d].slice(0, 0, hidden) + b[d].slice(0, hidden, 2 * hidden);
      const at::Tensor want = (d == 0 ? c.fwd : c.bwd)(pre);
      EXPECT_EQ(mismatch(y[0][d], want, 1e-10, 1e-12), "") << "direction " << d;
    }
  }
}

// clip bounds the pre-activations; LSTM's input_forget makes ft = 1 - it; one step against the
// formulas.
TEST(OnnxRnn, LstmClipInputForgetAndPeepholes) {
  at::manual_seed(11);
  const int64_t batch = 2, input = 3, H = 4;
  const at::Tensor x = at::randn({1, batch, input}, at::kDouble) * 3;
  const at::Tensor w = at::randn({1, 4 * H, input}, at::kDouble);
  const at::Tensor r = at::randn({1, 4 * H, H}, at::kDouble);
  const at::Tensor h0 = at::randn({1, batch, H}, at::kDouble);
  const at::Tensor c0 = at::randn({1, batch, H}, at::kDouble);
  const at::Tensor p = at::randn({1, 3 * H}, at::kDouble);
  onnx::NodeProto node;
  node.set_op_type("LSTM");
  for (const char* in : {"X", "W", "R", "", "", "initial_h", "initial_c", "P"}) node.add_input(in);
  for (const char* out : {"Y", "Y_h", "Y_c"}) node.add_output(out);
  auto* clip = node.add_attribute();
  clip->set_name("clip");
  clip->set_type(onnx::AttributeProto::FLOAT);
  clip->set_f(0.5f);
  set_attr(node, "input_forget", int64_t{1});
  const auto got = run_node(node, {x, w, r, at::Tensor(), at::Tensor(), h0, c0, p});

  const at::Tensor g = at::matmul(x[0], w[0].t()) + at::matmul(h0[0], r[0].t());
  const auto blk = [&](int k) { return g.slice(1, k * H, (k + 1) * H); };
  const auto pk = [&](int k) { return p[0].slice(0, k * H, (k + 1) * H); };
  const auto cl = [](const at::Tensor& t) { return at::clamp(t, -0.5, 0.5); };
  const at::Tensor i = at::sigmoid(cl(blk(0) + pk(0) * c0[0]));
  const at::Tensor f = 1 - i;
  const at::Tensor C = f * c0[0] + i * at::tanh(cl(blk(3)));
  const at::Tensor o = at::sigmoid(cl(blk(1) + pk(1) * C));
  const at::Tensor Hn = o * at::tanh(C);
  EXPECT_EQ(mismatch(got[0][0][0], Hn, 1e-10, 1e-12), "");
  EXPECT_EQ(mismatch(got[1][0], Hn, 1e-10, 1e-12), "");
  EXPECT_EQ(mismatch(got[2][0], C, 1e-10, 1e-12), "");
}

TEST(OnnxRnn, BadNodesFailWithOneLine) {
  onnx::NodeProto node;
  node.set_op_type("GRU");
  node.set_name("g");
  for (const char* in : {"X", "W", "R"}) node.add_input(in);
  node.add_output("Y");
  const at::Tensor x = at::zeros({2, 1, 3}), w = at::zeros({1, 12, 3}), r = at::zeros({1, 12, 4});
  EXPECT_EQ(run_node(node, {x, w, r})[0].sizes(), (std::vector<int64_t>{2, 1, 1, 4}));
  // W's rows are 3*hidden for GRU, not 4*hidden.
  EXPECT_THROW(run_node(node, {x, at::zeros({1, 16, 3}), r}), InputError);
  set_attr(node, "activations", std::vector<std::string>{"Sigmoid", "Swish"});
  EXPECT_THROW(run_node(node, {x, w, r}), InputError);
}

}  // namespace
