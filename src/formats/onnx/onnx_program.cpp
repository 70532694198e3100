#include "formats/onnx/onnx_program.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "formats/onnx/onnx_op.h"
#include "formats/onnx/onnx_tensor.h"
#include "formats/graph/graph_units.h"
#include "formats/graph/slot_lifetimes.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit::onnx_rt {

namespace {

// Opset 7 brought numpy broadcasting to every elementwise op; the ops whose inputs or attributes
// changed since (Slice, Pad, Clip, TopK, Softmax's 2-D view) read the form of the model's opset.
constexpr int64_t kOldestOpset = 7;
// A model file is read whole; protobuf itself refuses messages over 2 GiB.
constexpr int64_t kMaxModelBytes = (int64_t{1} << 31) - 1;
// Sub-graphs inside sub-graphs: exporters nest a few (a Loop in an If); deeper is a damaged file.
constexpr int kMaxNesting = 16;

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& n, size_t index) {
  return fmt::format("node {} '{}' ({}{})", index, n.name(), default_domain(n.domain()) ? "" : n.domain() + ".",
                     n.op_type());
}

// The nodes that create float32 from their attributes, which a float64 run reads as float64.
bool creates_float32(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  for (const auto& a : n.attribute()) {
    if ((op == "Cast" || op == "EyeLike" || op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" ||
         op == "RandomUniformLike") &&
        (a.name() == "to" || a.name() == "dtype") && a.i() == onnx::TensorProto::FLOAT)
      return true;
    if ((op == "Constant" || op == "ConstantOfShape") && a.name() == "value" && a.t().data_type() == onnx::TensorProto::FLOAT)
      return true;
    if (op == "Constant" && (a.name() == "value_float" || a.name() == "value_floats")) return true;
  }
  return false;
}

}  // namespace

struct OnnxProgram::Impl {
  // One graph: the model's, or a sub-graph held by a node's attribute.
  struct Graph {
    struct Node {
      const onnx::NodeProto* proto = nullptr;
      OpFn fn = nullptr;
      ValueOpFn vfn = nullptr;  // set instead of fn: an op over values (sequences)
      std::vector<int> in;    // slots; -1: an omitted optional input
      std::vector<int> out;   // slots; -1: an omitted output
      std::vector<int> release;  // slots no later node of this graph reads
      std::vector<char> hand_over;  // per input: its slot is released here, so the op gets the env's own handle
      std::vector<int> captured_by_subgraphs;  // slots the node's sub-graphs read (kept alive until it runs)
      std::string label;
      std::string profile_key;  // the op type, or the fused ops' ("MatMul+Add")
    };
    Graph* outer = nullptr;
    std::unordered_map<std::string, int> slot_of;
    int nslots = 0;
    std::vector<int> input_slots;    // the graph's inputs in order (a sub-graph's: what the op passes)
    std::vector<std::pair<int, size_t>> initializer_slots;  // slot, index into parameters
    std::vector<std::pair<int, int>> captured;  // slot, and the slot in the graph around it that it reads
    std::vector<Node> nodes;
    std::vector<int> output_slots;
    std::unordered_map<const onnx::AttributeProto*, std::unique_ptr<Graph>> subgraphs;
  };

  onnx::ModelProto model;
  std::string model_dir;
  int64_t opset = 0;
  std::vector<GraphInput> user_inputs;
  std::vector<char> root_sequence_inputs;  // per user input: a sequence of tensors
  std::vector<std::string> output_names;
  NamedTensors parameters, none;
  Graph root;
  bool promote = false;
  std::vector<std::string> census;
  std::string random_node;
  int float32_creators = 0;
  Limits limits;
  // GRASSAUDIT_ONNX_PROFILE set: each node's wall time is summed by op type, and the table goes
  // to stderr when the program is destroyed (where an ONNX forward's time goes, no profiler needed).
  bool profile = std::getenv("GRASSAUDIT_ONNX_PROFILE") != nullptr;
  mutable std::map<std::string, std::pair<double, int64_t>> op_seconds;  // op type -> seconds, calls

  ~Impl() {
    if (!profile || op_seconds.empty()) return;
    double total = 0;
    for (const auto& [op, v] : op_seconds) total += v.first;
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [op, v] : op_seconds) rows.emplace_back(v.first, op);
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "ONNX op time (GRASSAUDIT_ONNX_PROFILE): %.3f s in all\n", total);
    for (const auto& [sec, op] : rows)
      std::fprintf(stderr, "  %-22s %9.3f s %5.1f%% %8lld calls\n", op.c_str(), sec, 100 * sec / total,
                   static_cast<long long>(op_seconds.at(op).second));
  }

  [[noreturn]] static void fail(const std::string& why) { throw InputError(why); }

  int define(Graph& g, const std::string& name, const std::string& where) {
    if (name.empty()) return -1;
    if (g.slot_of.count(name)) fail(fmt::format("{} defines '{}' a second time", where, name));
    g.slot_of[name] = g.nslots;
    return g.nslots++;
  }
  // A name read in `g`: its own slot, or a slot that captures it from the graph around g (which
  // captures it in turn from further out), so each graph's env holds what its sub-graphs read.
  int read(Graph& g, const std::string& name, const std::string& where) {
    if (name.empty()) return -1;
    auto it = g.slot_of.find(name);
    if (it != g.slot_of.end()) return it->second;
    if (g.outer) {
      bool somewhere = false;
      for (Graph* o = g.outer; o && !somewhere; o = o->outer) somewhere = o->slot_of.count(name) > 0;
      if (somewhere) {
        const int outer_slot = read(*g.outer, name, where);
        const int s = define(g, name, where);
        g.captured.emplace_back(s, outer_slot);
        return s;
      }
    }
    fail(fmt::format("{} reads '{}', which nothing before it defines", where, name));
  }

  void compile(Graph& g, const onnx::GraphProto& gp, bool is_root, const std::string& scope);
  static void fuse_matmul_add(Graph& g);
  // Per node, the slots its read is the last of (released after it) and the inputs it may take over.
  static void plan_releases(Graph& g);
  // `subgraph_calls`: how many sub-graphs this run has called (Limits::max_subgraph_calls).
  // `recorder` (the root graph only): each node reads what its units see (fed inputs, held
  // outputs), and no node takes over its inputs' handles (the records keep them).
  void run_graph(const Graph& g, std::vector<Value>& env, const std::vector<std::vector<Value>*>& outer_envs,
                 const std::vector<const Graph*>& outer_graphs, int64_t& subgraph_calls,
                 UnitRecorder* recorder = nullptr) const;
  void run_node(const Graph& g, const Graph::Node& n, bool hand_over, std::vector<Value>& env,
                const std::vector<std::vector<Value>*>& outer_envs, const std::vector<const Graph*>& outer_graphs,
                int64_t& subgraph_calls) const;
  std::vector<Value> call(const Graph& g, const std::vector<Value>& inputs, std::vector<std::vector<Value>*> outer_envs,
                          std::vector<const Graph*> outer_graphs, int64_t& subgraph_calls,
                          UnitRecorder* recorder = nullptr) const;
  // The root graph's units, built on first use.
  GraphUnits units;
  bool units_built = false;
  const GraphUnits& unit_plan();
};

void OnnxProgram::Impl::compile(Graph& g, const onnx::GraphProto& gp, bool is_root, const std::string& scope) {
  const std::string where = scope.empty() ? "the graph" : scope;
  int depth = 0;
  for (const Graph* o = g.outer; o; o = o->outer) ++depth;
  if (depth > kMaxNesting) fail(fmt::format("{}: sub-graphs nested over {} deep", where, kMaxNesting));
  std::set<std::string> init_names;
  for (const auto& init : gp.initializer()) {
    const std::string what = fmt::format("{}: initializer '{}'", where, init.name());
    if (init.name().empty()) fail(fmt::format("{} has an initializer with no name", where));
    at::Tensor t = tensor_from_proto(init, model_dir, [&](const std::string& why) { fail(fmt::format("{}: {}", where, why)); });
    const int s = define(g, init.name(), what);
    g.initializer_slots.emplace_back(s, parameters.size());
    parameters.emplace_back(scope.empty() ? init.name() : scope + "/" + init.name(), t);
    init_names.insert(init.name());
  }
  if (gp.sparse_initializer_size())
    fail(fmt::format("{} has sparse initializers, which this reader does not read", where));
  for (const auto& in : gp.input()) {
    if (is_root && init_names.count(in.name())) continue;  // an initializer listed as an input (IR < 4): a weight
    if (in.name().empty()) fail(fmt::format("{} has an input with no name", where));
    // A sequence of tensors is a value like a tensor (a Loop body carries one); a root input of
    // that type is fed by run_values only (the audit feeds tensors).
    const bool sequence = in.type().has_sequence_type() && in.type().sequence_type().elem_type().has_tensor_type();
    const bool untyped = !is_root && in.type().value_case() == onnx::TypeProto::VALUE_NOT_SET;  // a body's, typed by use
    if (!in.type().has_tensor_type() && !sequence && !untyped)
      fail(fmt::format("{}: input '{}' is neither a tensor nor a sequence of tensors (a map or optional), which this "
                       "reader does not take",
                       where, in.name()));
    g.input_slots.push_back(define(g, in.name(), where));
    if (!is_root) continue;
    GraphInput u;
    u.name = in.name();
    root_sequence_inputs.push_back(sequence);
    const auto& tt = sequence ? in.type().sequence_type().elem_type().tensor_type() : in.type().tensor_type();
    std::string why;
    const auto dt = scalar_type_of(tt.elem_type(), &why);
    if (!dt) fail(fmt::format("input '{}': {}", in.name(), why));
    u.dtype = *dt;
    u.shape_known = tt.has_shape() && !sequence;
    if (tt.has_shape() && !sequence)
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value() && d.dim_value() < 0)
          fail(fmt::format("input '{}' declares the size {}", in.name(), d.dim_value()));
        if (d.has_dim_value()) u.sizes.emplace_back(d.dim_value());
        else u.sizes.emplace_back(std::nullopt);
        u.ranges.emplace_back(1, -1);
      }
    user_inputs.push_back(u);
  }
  const auto& table = op_table();
  const auto& value_table = value_op_table();
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Graph::Node n;
    n.proto = &np;
    n.label = (scope.empty() ? "" : scope + ": ") + node_label(np, i);
    n.profile_key = np.op_type();
    if (!default_domain(np.domain()))
      fail(fmt::format("{}: domain '{}' is not one this reader runs (it runs the default ONNX domain)", n.label, np.domain()));
    if (auto v = value_table.find(np.op_type()); v != value_table.end()) {
      n.vfn = v->second;
    } else {
      auto op = table.find(np.op_type());
      if (op == table.end())
        fail(fmt::format("{}: op {} (domain ai.onnx, opset {}) is not one this reader runs", n.label, np.op_type(), opset));
      n.fn = op->second;
    }
    if (std::find(census.begin(), census.end(), np.op_type()) == census.end()) census.push_back(np.op_type());
    for (const auto& name : np.input()) n.in.push_back(read(g, name, n.label));
    for (const auto& a : np.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPHS || a.graphs_size())
        fail(fmt::format("{}: attribute '{}' holds a list of graphs, which no op this reader runs takes", n.label, a.name()));
      if (a.type() != onnx::AttributeProto::GRAPH && !a.has_g()) continue;
      auto sub = std::make_unique<Graph>();
      sub->outer = &g;
      compile(*sub, a.g(), false, fmt::format("{} attribute '{}'", n.label, a.name()));
      for (const auto& [inner, outer_slot] : sub->captured) n.captured_by_subgraphs.push_back(outer_slot);
      g.subgraphs[&a] = std::move(sub);
    }
    if (creates_float32(np)) ++float32_creators;
    if (random_node.empty()) {
      const std::string& t = np.op_type();
      const bool random = t == "RandomNormal" || t == "RandomUniform" || t == "RandomNormalLike" ||
                          t == "RandomUniformLike" || t == "Multinomial" || t == "Bernoulli" ||
                          (t == "Dropout" && np.input_size() >= 3 && !np.input(2).empty());
      if (random) random_node = n.label;
    }
    for (const auto& name : np.output()) n.out.push_back(define(g, name, n.label));
    g.nodes.push_back(std::move(n));
  }
  for (const auto& out : gp.output()) {
    if (out.name().empty()) fail(fmt::format("{} has an output with no name", where));
    g.output_slots.push_back(read(g, out.name(), fmt::format("{} output", where)));
    if (is_root) output_names.push_back(out.name());
  }
  if (g.output_slots.empty()) fail(fmt::format("{} has no outputs", where));
  fuse_matmul_add(g);
  plan_releases(g);
}

// When each slot is dropped, and which reads may take over the env's own handle.
void OnnxProgram::Impl::plan_releases(Graph& g) {
  // Each slot's last reader releases it, so a long graph holds only what later nodes still need;
  // what this graph's own sub-graphs' callers read from it, its outputs and its initializers stay
  // for the whole run.
  std::vector<std::vector<int>> reads(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    reads[i] = g.nodes[i].in;
    reads[i].insert(reads[i].end(), g.nodes[i].captured_by_subgraphs.begin(), g.nodes[i].captured_by_subgraphs.end());
  }
  std::vector<int> kept = g.output_slots;
  for (const auto& [s, outer_slot] : g.captured) kept.push_back(s);
  for (const auto& [s, idx] : g.initializer_slots) kept.push_back(s);
  const auto release = releases_after_last_read(g.nslots, reads, kept);
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].release = release[i];
  // A slot's last reader gets the env's handle itself (moved, not copied), so an op that sees its
  // input held by nothing else may write its output there (OpContext::overwritable) instead of
  // allocating, and touching, a fresh buffer. Not where the node's sub-graphs read the env, nor
  // for a slot the node reads twice (Mul(x, x) copies both handles, so neither is overwritten).
  for (auto& n : g.nodes) {
    n.hand_over.assign(n.in.size(), 0);
    if (!n.captured_by_subgraphs.empty()) continue;
    for (size_t k = 0; k < n.in.size(); ++k) {
      const int s = n.in[k];
      const bool released = s >= 0 && std::find(n.release.begin(), n.release.end(), s) != n.release.end();
      n.hand_over[k] = released && std::count(n.in.begin(), n.in.end(), s) == 1;
    }
  }
}

void OnnxProgram::Impl::fuse_matmul_add(Graph& g) {
  // nodes: g's, in order; slots read by several readers, a graph output or a sub-graph are left.
  // A MatMul whose one reader is an Add of an initializer (a Linear's bias, as torch.onnx.export
  // writes nn.Linear on a 3-D input) runs as one node computing both (op_matmul_add: one addmm
  // where the shapes allow it), so the product is not written, then read and written again.
  std::vector<int> readers(g.nslots, 0);
  for (const auto& n : g.nodes) {
    for (int s : n.in)
      if (s >= 0) ++readers[s];
    for (int s : n.captured_by_subgraphs) readers[s] += 2;
  }
  for (int s : g.output_slots) readers[s] += 2;
  for (const auto& [s, outer_slot] : g.captured) readers[s] += 2;
  std::vector<char> initializer(g.nslots, 0);
  for (const auto& [s, idx] : g.initializer_slots) initializer[s] = 1;
  std::vector<int> reader_of(g.nslots, -1);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    for (int s : g.nodes[j].in)
      if (s >= 0) reader_of[s] = static_cast<int>(j);
  std::vector<char> fused_away(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Graph::Node& mm = g.nodes[i];
    if (mm.proto->op_type() != "MatMul" || mm.out.size() != 1 || mm.out[0] < 0 || mm.in.size() != 2) continue;
    const int product = mm.out[0];
    if (readers[product] != 1) continue;
    const int j = reader_of[product];
    Graph::Node& add = g.nodes[j];
    if (add.proto->op_type() != "Add" || add.in.size() != 2 || add.out.size() != 1 || add.out[0] < 0) continue;
    const int bias = add.in[0] == product ? add.in[1] : add.in[0];
    if (bias < 0 || !initializer[bias]) continue;
    mm.in.push_back(bias);
    mm.out = add.out;
    mm.fn = matmul_add_fn();
    mm.profile_key = "MatMul+Add";
    fused_away[j] = 1;
  }
  std::vector<Graph::Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!fused_away[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

std::vector<Value> OnnxProgram::Impl::call(const Graph& g, const std::vector<Value>& inputs,
                                           std::vector<std::vector<Value>*> outer_envs,
                                                std::vector<const Graph*> outer_graphs, int64_t& subgraph_calls,
                                           UnitRecorder* recorder) const {
  std::vector<Value> env(g.nslots);
  if (inputs.size() > g.input_slots.size())
    throw InputError(fmt::format("a sub-graph takes {} inputs, the op passes {}", g.input_slots.size(), inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) env[g.input_slots[i]] = inputs[i];
  for (const auto& [s, idx] : g.initializer_slots) env[s] = parameters[idx].second;
  for (const auto& [s, outer_slot] : g.captured) env[s] = (*outer_envs.back())[outer_slot];
  run_graph(g, env, outer_envs, outer_graphs, subgraph_calls, recorder);
  if (recorder)  // the graph's outputs read the held units' outputs
    for (auto& [slot, t] : recorder->reads(g.nodes.size(), [&](int k) {
           return env[k].is_sequence() ? at::Tensor() : env[k].tensor;
         }))
      env[slot] = Value(std::move(t));
  std::vector<Value> out;
  for (int s : g.output_slots) out.push_back(env[s]);
  return out;
}

void OnnxProgram::Impl::run_graph(const Graph& g, std::vector<Value>& env,
                                  const std::vector<std::vector<Value>*>& outer_envs,
                                  const std::vector<const Graph*>& outer_graphs, int64_t& subgraph_calls,
                                  UnitRecorder* recorder) const {
  std::vector<std::pair<int, Value>> own;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Graph::Node& n = g.nodes[i];
    if (recorder)
      for (auto& [slot, t] : recorder->reads(i, [&](int k) { return env[k].is_sequence() ? at::Tensor() : env[k].tensor; })) {
        own.emplace_back(slot, std::move(env[slot]));
        env[slot] = Value(std::move(t));
      }
    run_node(g, n, recorder == nullptr, env, outer_envs, outer_graphs, subgraph_calls);
    for (auto& [slot, v] : own) env[slot] = std::move(v);
    own.clear();
    for (int s : n.release) env[s] = Value();
  }
}

// One node on `env`: its inputs gathered (taken over where `hand_over` and the plan allow), one
// OpContext, its outputs written to their slots.
void OnnxProgram::Impl::run_node(const Graph& g, const Graph::Node& n, bool hand_over, std::vector<Value>& env,
                                 const std::vector<std::vector<Value>*>& outer_envs,
                                 const std::vector<const Graph*>& outer_graphs, int64_t& subgraph_calls) const {
  {
    std::vector<at::Tensor> in;
    std::vector<Value> values;  // an op over values gets its inputs as they are
    std::vector<at::IntArrayRef> shapes;
    in.reserve(n.in.size());
    for (size_t k = 0; k < n.in.size(); ++k) {
      const int s = n.in[k];
      if (n.vfn) {
        if (s < 0) values.emplace_back();
        else if (hand_over && n.hand_over[k]) values.push_back(std::move(env[s]));
        else values.push_back(env[s]);
        continue;
      }
      if (s >= 0 && env[s].is_sequence())
        throw InputError(fmt::format("{}: input {} ('{}') is a sequence; {} takes tensors", n.label, k, n.proto->input(k),
                                     n.proto->op_type()));
      if (s < 0) in.emplace_back();
      else if (hand_over && n.hand_over[k]) in.push_back(std::move(env[s].tensor));
      else in.push_back(env[s].tensor);
      if (in.back().defined()) shapes.push_back(in.back().sizes());
    }
    // Inputs that broadcast to more than a node may make are refused before an op allocates it.
    if (const auto b = broadcast_shape(shapes); b && span_within(*b, limits.max_elements) < 0)
      throw InputError(fmt::format("{}: the inputs broadcast to [{}], over the {} elements a node may make", n.label,
                                   fmt::join(*b, ", "), limits.max_elements));
    OpContext::SubgraphRunner runner;
    if (!g.subgraphs.empty())
      runner = [&](const onnx::AttributeProto& a, const std::vector<Value>& inputs) {
        auto it = g.subgraphs.find(&a);
        if (it == g.subgraphs.end()) throw InputError("a sub-graph the reader did not compile");
        if (++subgraph_calls > limits.max_subgraph_calls)
          throw InputError(fmt::format("{}: one run calls sub-graphs (If branches, Loop and Scan iterations) over {} times",
                                       n.label, limits.max_subgraph_calls));
        auto envs = outer_envs;
        auto graphs = outer_graphs;
        envs.push_back(&env);
        graphs.push_back(&g);
        return call(*it->second, inputs, envs, graphs, subgraph_calls);
      };
    OpContext ctx = n.vfn ? OpContext(*n.proto, opset, std::move(values), promote, std::move(runner), limits.max_elements)
                          : OpContext(*n.proto, opset, std::move(in), promote, std::move(runner), limits.max_elements);
    std::vector<Value> out;
    auto run_op = [&] {
      if (n.vfn) {
        out = n.vfn(ctx);
      } else {
        auto tensors = n.fn(ctx);
        out.assign(std::make_move_iterator(tensors.begin()), std::make_move_iterator(tensors.end()));
      }
    };
    try {
      if (profile) {
        const auto t0 = std::chrono::steady_clock::now();
        run_op();
        auto& slot = op_seconds[n.profile_key];
        slot.first += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++slot.second;
      } else {
        run_op();
      }
    } catch (const InputError&) {
      throw;
    } catch (const c10::Error& e) {
      throw InputError(fmt::format("{}: {}", n.label, e.what_without_backtrace()));
    } catch (const std::runtime_error& e) {  // ATen's shape inference (reshape's -1) throws these
      throw InputError(fmt::format("{}: {}", n.label, e.what()));
    }
    for (size_t k = 0; k < n.out.size(); ++k) {
      if (n.out[k] < 0) continue;
      if (k >= out.size() || !out[k].defined())
        throw InputError(fmt::format("{}: output {} ('{}') was not computed", n.label, k, n.proto->output(k)));
      if (!out[k].is_sequence() && span_within(out[k].tensor.sizes(), limits.max_elements) < 0)
        throw InputError(fmt::format("{}: output {} ('{}') has the shape [{}], over the {} elements a node may make",
                                     n.label, k, n.proto->output(k), fmt::join(out[k].tensor.sizes(), ", "),
                                     limits.max_elements));
      env[n.out[k]] = std::move(out[k]);
    }
  }
}

// The root graph's units: each node's scope is its name's ("/mixer/rnn/LSTM" runs in mixer.rnn,
// "/Add" in the root); a node the exporter named outside any scope ("Constant_33", "Loop_36")
// runs in the longest scope its scoped producers and readers share (the root when they share
// none). A node's sub-graphs (If, Loop, Scan) are part of it.
const GraphUnits& OnnxProgram::Impl::unit_plan() {
  if (units_built) return units;
  units_built = true;
  const Graph& g = root;
  const size_t n = g.nodes.size();
  std::vector<std::vector<std::string>> scope(n);
  std::vector<char> scoped(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const std::string& name = g.nodes[i].proto->name();
    scoped[i] = !name.empty() && name[0] == '/';
    scope[i] = onnx_scope(name);
  }
  std::vector<int> producer(static_cast<size_t>(g.nslots), -1);
  std::vector<std::vector<int>> readers(static_cast<size_t>(g.nslots));
  for (size_t i = 0; i < n; ++i) {
    for (int s : g.nodes[i].out)
      if (s >= 0) producer[static_cast<size_t>(s)] = static_cast<int>(i);
    for (int s : g.nodes[i].in)
      if (s >= 0) readers[static_cast<size_t>(s)].push_back(static_cast<int>(i));
    for (int s : g.nodes[i].captured_by_subgraphs) readers[static_cast<size_t>(s)].push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    if (scoped[i]) continue;
    std::optional<std::vector<std::string>> common;
    auto meet = [&](int j) {
      if (j >= 0 && scoped[static_cast<size_t>(j)]) keep_common_prefix(common, scope[static_cast<size_t>(j)]);
    };
    const auto& node = g.nodes[i];
    for (int s : node.in)
      if (s >= 0) meet(producer[static_cast<size_t>(s)]);
    for (int s : node.captured_by_subgraphs) meet(producer[static_cast<size_t>(s)]);
    for (int s : node.out)
      if (s >= 0)
        for (int r : readers[static_cast<size_t>(s)]) meet(r);
    if (common) scope[i] = *common;
  }
  std::vector<UnitStep> steps;
  for (size_t i = 0; i < n; ++i) {
    const auto& node = g.nodes[i];
    UnitStep u;
    std::string path;
    for (const auto& c : scope[i]) {
      path += (path.empty() ? "" : ".") + c;
      u.scopes.push_back(UnitStep::Scope{path, std::nullopt, std::nullopt});
    }
    u.is_unit = true;
    u.op = node.profile_key;
    if (!node.proto->name().empty()) u.node = node.proto->name();
    u.reads = node.in;
    u.reads.insert(u.reads.end(), node.captured_by_subgraphs.begin(), node.captured_by_subgraphs.end());
    u.defines = node.out;
    steps.push_back(std::move(u));
  }
  units = GraphUnits(steps, g.nslots, g.output_slots);
  return units;
}

OnnxProgram::OnnxProgram() : impl_(std::make_unique<Impl>()) {}
OnnxProgram::~OnnxProgram() = default;

int64_t OnnxProgram::newest_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? kOldestOpset : it->second.second;
}

std::unique_ptr<OnnxProgram> OnnxProgram::load(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(kMaxModelBytes))
    throw InputError("is over the 2 GiB a protobuf can hold (weights belong in external data)");
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return from_bytes(read_file(path), dir.empty() ? "." : dir);
}

std::unique_ptr<OnnxProgram> OnnxProgram::from_bytes(const std::string& bytes, const std::string& model_dir) {
  std::unique_ptr<OnnxProgram> p(new OnnxProgram());
  Impl& m = *p->impl_;
  m.model_dir = model_dir;
  if (bytes.size() > static_cast<size_t>(kMaxModelBytes) || !m.model.ParseFromString(bytes))
    throw InputError("not an ONNX model (the bytes are not a ModelProto: not a protobuf, or a truncated one)");
  if (!m.model.has_graph() || m.model.graph().node_size() == 0)
    throw InputError(m.model.has_graph() ? "an ONNX model whose graph has no nodes" : "an ONNX model with no graph");
  bool found = false;
  for (const auto& os : m.model.opset_import()) {
    if (default_domain(os.domain())) {
      m.opset = os.version();
      found = true;
    }
  }
  if (!found) throw InputError("an ONNX model that imports no default-domain opset");
  const int64_t newest = newest_opset();
  if (m.opset < kOldestOpset || m.opset > newest)
    throw InputError(fmt::format("opset {} of the default domain is not one this reader runs (it runs {} to {}, the newest "
                                 "this libonnx knows)",
                                 m.opset, kOldestOpset, newest));
  if (m.model.functions_size())
    for (const auto& n : m.model.graph().node())
      for (const auto& fn : m.model.functions())
        if (fn.name() == n.op_type() && fn.domain() == n.domain())
          throw InputError(fmt::format("node '{}' calls the model-local function {}.{}, which this reader does not inline",
                                       n.name(), fn.domain(), fn.name()));
  m.compile(m.root, m.model.graph(), true, "");
  return p;
}

const std::vector<GraphInput>& OnnxProgram::inputs() const { return impl_->user_inputs; }
const onnx::ModelProto& OnnxProgram::model_proto() const { return impl_->model; }
const std::vector<std::string>& OnnxProgram::output_names() const { return impl_->output_names; }
GraphProgram::NamedTensors& OnnxProgram::parameters() { return impl_->parameters; }
GraphProgram::NamedTensors& OnnxProgram::buffers() { return impl_->none; }
GraphProgram::NamedTensors& OnnxProgram::constants() { return impl_->none; }
std::string OnnxProgram::first_random_node() const { return impl_->random_node; }
std::vector<std::string> OnnxProgram::op_census() const { return impl_->census; }
int64_t OnnxProgram::opset() const { return impl_->opset; }

std::string OnnxProgram::describe() const {
  const auto& m = impl_->model;
  std::string producer = m.producer_name().empty() ? "an unknown producer" : m.producer_name();
  if (!m.producer_version().empty()) producer += " " + m.producer_version();
  return fmt::format("ONNX IR {}, opset {}, {}", m.ir_version(), impl_->opset, producer);
}

void OnnxProgram::set_limits(const Limits& limits) { impl_->limits = limits; }

int OnnxProgram::promote_dtype_arguments(bool on) {
  impl_->promote = on;
  return impl_->float32_creators;
}

std::vector<at::Tensor> OnnxProgram::run_all(const std::vector<at::Tensor>& user_inputs, bool check_declared) {
  return run_all_with(user_inputs, check_declared, nullptr);
}

std::vector<at::Tensor> OnnxProgram::run_all_with(const std::vector<at::Tensor>& user_inputs, bool check_declared,
                                                  UnitRecorder* recorder) {
  const auto& in = impl_->user_inputs;
  if (user_inputs.size() != in.size())
    throw InputError(fmt::format("the graph takes {} inputs, got {}", in.size(), user_inputs.size()));
  std::vector<Value> args;
  for (size_t i = 0; i < in.size(); ++i) {
    if (impl_->root_sequence_inputs[i])
      throw InputError(fmt::format("input '{}' is a sequence of tensors, which the audit does not feed", in[i].name));
    at::Tensor t = user_inputs[i];
    // Integer ids go in as the graph declares them (int32 or int64); floats keep their precision,
    // so a float64 run stays float64.
    if (!at::isFloatingType(in[i].dtype) || !at::isFloatingType(t.scalar_type())) t = t.to(in[i].dtype);
    // A held scalar (--input NAME=const:V) takes the declared type and a declared [1] shape.
    if (t.dim() == 0) {
      t = t.to(in[i].dtype);
      bool one = true;
      for (const auto& d : in[i].sizes) one = one && d && *d == 1;
      if (one && !in[i].sizes.empty()) t = t.reshape(std::vector<int64_t>(in[i].sizes.size(), 1));
    }
    if (!check_declared) {
      args.push_back(t);
      continue;
    }
    if (!in[i].sizes.empty() && static_cast<size_t>(t.dim()) != in[i].sizes.size())
      throw InputError(fmt::format("input '{}' has rank {} in the graph, got a tensor of rank {}", in[i].name,
                                   in[i].sizes.size(), t.dim()));
    for (size_t d = 0; d < in[i].sizes.size(); ++d)
      if (in[i].sizes[d] && *in[i].sizes[d] != t.size(d))
        throw InputError(fmt::format("input '{}' has size {} at dimension {} in the graph, got {}", in[i].name,
                                     *in[i].sizes[d], d, t.size(d)));
    args.push_back(t);
  }
  int64_t subgraph_calls = 0;
  std::vector<at::Tensor> out;
  const auto values = impl_->call(impl_->root, args, {}, {}, subgraph_calls, recorder);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].is_sequence())
      throw InputError(fmt::format("output '{}' is a sequence of tensors: stack it into one tensor to audit it",
                                   impl_->output_names[i]));
    out.push_back(values[i].tensor);
  }
  return out;
}

std::vector<Value> OnnxProgram::run_values(const std::vector<Value>& user_inputs) {
  if (user_inputs.size() != impl_->user_inputs.size())
    throw InputError(fmt::format("the graph takes {} inputs, got {}", impl_->user_inputs.size(), user_inputs.size()));
  for (size_t i = 0; i < user_inputs.size(); ++i)
    if (user_inputs[i].is_sequence() != static_cast<bool>(impl_->root_sequence_inputs[i]))
      throw InputError(fmt::format("input '{}' is {} in the graph", impl_->user_inputs[i].name,
                                   impl_->root_sequence_inputs[i] ? "a sequence" : "a tensor"));
  int64_t subgraph_calls = 0;
  return impl_->call(impl_->root, user_inputs, {}, {}, subgraph_calls);
}

c10::IValue OnnxProgram::run(const std::vector<at::Tensor>& user_inputs) { return outputs_value(run_all(user_inputs)); }

c10::IValue OnnxProgram::run_units(const std::vector<at::Tensor>& user_inputs, const UnitTensors& fed,
                                   const UnitTensors& held, std::vector<UnitValues>& values) {
  UnitRecorder recorder(impl_->unit_plan(), fed, held, values);
  return outputs_value(run_all_with(user_inputs, true, &recorder));
}

const std::vector<ProbeUnit>& OnnxProgram::units() { return impl_->unit_plan().units(); }

c10::IValue OnnxProgram::outputs_value(std::vector<at::Tensor> out) const {
  if (out.size() == 1) return out[0];
  c10::Dict<std::string, at::Tensor> dict;
  for (size_t i = 0; i < out.size(); ++i) dict.insert(impl_->output_names[i], out[i]);
  return dict;
}

}  // namespace grassaudit::onnx_rt
