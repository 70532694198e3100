#include "formats/export/export_graph.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

#include "formats/graph/slot_lifetimes.h"
#include "util/error.h"

// Reading one graph of an ExportedProgram: each node's arguments matched against the schema of
// the op this LibTorch has, where each output goes, higher-order ops' sub-graphs, and when each
// value may be dropped.
namespace grassaudit {

using namespace exported;

Arg ExportedProgram::Impl::plain_argument(const json& u, const std::string& where) {
  return argument(u, nullptr, where);
}

Arg ExportedProgram::Impl::argument(const json& u, const c10::TypePtr& type_in, const std::string& where) {
  auto [kind, v] = kind_of(u, "an argument");
  c10::TypePtr type = type_in;
  if (type && type->kind() == c10::TypeKind::OptionalType) type = type->castRaw<c10::OptionalType>()->getElementType();
  const bool wants_float = type && type->kind() == c10::TypeKind::FloatType;
  const bool wants_tensor = type && type->kind() == c10::TypeKind::TensorType;
  Arg a;
  a.to_tensor = wants_tensor && kind != "as_tensor" && kind != "as_optional_tensor" && kind != "as_none";
  auto name_of = [&](const json& t) { return field(t, "name", where).get<std::string>(); };
  if (kind == "as_none") {
    a.value = c10::IValue();
  } else if (kind == "as_tensor") {
    a.k = Arg::K::kSlot;
    a.slot = read_slot(name_of(*v), where);
  } else if (kind == "as_optional_tensor") {
    auto [k2, v2] = kind_of(*v, "an optional tensor");
    if (k2 == "as_tensor") {
      a.k = Arg::K::kSlot;
      a.slot = read_slot(name_of(*v2), where);
    }
  } else if (kind == "as_tensors") {
    a.k = Arg::K::kSlotList;
    for (const auto& t : *v) a.slots.push_back(read_slot(name_of(t), where));
  } else if (kind == "as_optional_tensors") {
    a.k = Arg::K::kOptSlotList;
    for (const auto& t : *v) {
      auto [k2, v2] = kind_of(t, "an optional tensor");
      a.slots.push_back(k2 == "as_tensor" ? read_slot(name_of(*v2), where) : -1);
    }
  } else if (kind == "as_int") {
    if (wants_float) a.value = static_cast<double>(v->get<int64_t>());
    else a.value = v->get<int64_t>();
  } else if (kind == "as_ints") {
    a.value = v->get<std::vector<int64_t>>();
  } else if (kind == "as_float") {
    a.value = float_of(*v);
  } else if (kind == "as_floats") {
    if (!v->is_array()) throw InputError(fmt::format("{}: as_floats is not a list", where));
    std::vector<double> fs;
    for (const auto& e : *v) fs.push_back(float_of(e));
    a.value = fs;
  } else if (kind == "as_bool") {
    a.value = v->get<bool>();
  } else if (kind == "as_bools") {
    c10::List<bool> l;
    for (const auto& b : *v) l.push_back(b.get<bool>());
    a.value = l;
  } else if (kind == "as_string") {
    a.value = v->get<std::string>();
  } else if (kind == "as_strings") {
    c10::List<std::string> l;
    for (const auto& s : *v) l.push_back(s.get<std::string>());
    a.value = l;
  } else if (kind == "as_sym_int" || kind == "as_sym_bool" || kind == "as_sym_float") {
    auto [k2, v2] = kind_of(*v, "a symbolic value");
    if (k2 == "as_name") {
      a.k = Arg::K::kSlot;
      a.slot = read_slot(v2->get<std::string>(), where);
      a.to_double = wants_float;
    } else if (k2 == "as_int") {
      if (wants_float) a.value = static_cast<double>(v2->get<int64_t>());
      else a.value = v2->get<int64_t>();
    } else if (k2 == "as_bool") {
      a.value = v2->get<bool>();
    } else if (k2 == "as_float") {
      a.value = float_of(*v2);
    } else {
      throw InputError(fmt::format("{}: a symbolic value of kind {} is not read", where, k2));
    }
  } else if (kind == "as_sym_ints") {
    bool all_ints = true;
    for (const auto& e : *v) all_ints = all_ints && kind_of(e, "a symbolic int").first == "as_int";
    if (all_ints) {
      std::vector<int64_t> ints;
      for (const auto& e : *v) ints.push_back(e.at("as_int").get<int64_t>());
      a.value = ints;
    } else {
      a.k = Arg::K::kSymIntList;
      for (const auto& e : *v) {
        auto [k2, v2] = kind_of(e, "a symbolic int");
        if (k2 == "as_name") {
          a.slots.push_back(read_slot(v2->get<std::string>(), where));
          a.ints.push_back(0);
        } else {
          a.slots.push_back(-1);
          a.ints.push_back(v2->get<int64_t>());
        }
      }
    }
  } else if (kind == "as_scalar_type") {
    const at::ScalarType t = scalar_type(v->get<int64_t>());
    a.value = static_cast<int64_t>(t);
    a.float32_dtype = t == at::kFloat;
  } else if (kind == "as_memory_format") {
    a.value = memory_format(v->get<int64_t>());
  } else if (kind == "as_layout") {
    a.value = serde_layout(v->get<int64_t>());
  } else if (kind == "as_device") {
    const std::string t = field(*v, "type", where).get<std::string>();
    if (t != "cpu") throw InputError(fmt::format("{}: device '{}': the audit runs on the CPU", where, t));
    a.value = c10::Device(c10::kCPU);
  } else {
    // as_graph (a higher-order op's sub-graph), as_custom_obj (TorchBind), as_operator, ...
    throw InputError(fmt::format("{}: an argument of kind {}, which grassaudit does not read", where, kind));
  }
  return a;
}

void ExportedProgram::Impl::parse_node(const json& node, size_t index) {
  Step s;
  s.target = field(node, "target", "a node").get<std::string>();
  root->census.push_back(s.target);
  const json& outputs = field(node, "outputs", "node " + s.target);
  const json& inputs = field(node, "inputs", "node " + s.target);
  s.name = node.contains("name") && node["name"].is_string() ? node["name"].get<std::string>() : "";
  if (s.name.empty() && !outputs.empty()) {
    auto [k, v] = kind_of(outputs[0], "an output");
    if (v->is_object() && v->contains("name") && (*v)["name"].is_string()) s.name = (*v)["name"].get<std::string>();
    else if (v->is_object() && v->contains("as_name")) s.name = (*v)["as_name"].get<std::string>();
    else if (v->is_array() && !v->empty() && (*v)[0].is_object() && (*v)[0].contains("name") &&
             (*v)[0]["name"].is_string())  // a list return (a higher-order op's): its first item's name
      s.name = (*v)[0]["name"].get<std::string>();
  }
  const std::string where = fmt::format("node {} ({}, #{})", s.name.empty() ? "?" : s.name, s.target, index);
  const std::string& t = s.target;

  // Positional arguments as the graph lists them (the _operator nodes and the special aten ones).
  auto positional = [&]() {
    std::vector<Arg> args;
    for (const auto& in : inputs) args.push_back(plain_argument(field(in, "arg", where), where));
    return args;
  };
  // One symbolic (or plain) output, bound to a new slot.
  auto scalar_output = [&]() {
    if (outputs.size() != 1) throw InputError(fmt::format("{}: expected one output, got {}", where, outputs.size()));
    auto [k, v] = kind_of(outputs[0], "an output");
    Out o;
    if (v->is_object() && v->contains("as_name")) o.slot = new_slot((*v)["as_name"].get<std::string>(), where);
    else if (v->is_object() && v->contains("name")) o.slot = new_slot((*v)["name"].get<std::string>(), where);
    s.outs.push_back(o);
  };

  if (t.rfind("torch.ops.higher_order.", 0) == 0) {
    parse_higher_order(inputs, outputs, s, where);
  } else if (t == "torch.ops.aten.sym_size.int" || t == "torch.ops.aten.sym_stride.int" ||
      t == "torch.ops.aten.sym_numel.default" || t == "torch.ops.aten.sym_storage_offset.default") {
    s.k = t == "torch.ops.aten.sym_size.int"     ? Step::K::kSymSize
          : t == "torch.ops.aten.sym_stride.int" ? Step::K::kSymStride
                                                 : Step::K::kSymNumel;
    if (t == "torch.ops.aten.sym_storage_offset.default")
      throw InputError(fmt::format("{}: sym_storage_offset is not evaluated", where));
    s.args = positional();
    scalar_output();
  } else if (t == "torch.ops.aten._assert_scalar.default") {
    s.k = Step::K::kAssertScalar;
    s.args = positional();
  } else if (t == "torch.ops.aten.sym_constrain_range.default" ||
             t == "torch.ops.aten.sym_constrain_range_for_size.default") {
    // A data-dependent size's declared range: the _assert_scalar nodes torch.export emits beside
    // it check what the graph relies on, and the input ranges are checked at each run.
    s.k = Step::K::kNoop;
  } else if (t == "torch.ops.aten._assert_tensor_metadata.default" || t == "torch.ops.aten._assert_async.msg") {
    s.k = Step::K::kNoop;  // metadata checks of the trace; the run's own kernels check what they need
  } else if (t.rfind("_operator.", 0) == 0 || t.rfind("torch.sym_", 0) == 0 || t.rfind("math.", 0) == 0) {
    s.k = Step::K::kOperator;
    s.args = positional();
    scalar_output();
  } else if (t.rfind("torch.ops.", 0) == 0) {
    // torch.ops.<namespace>.<name>.<overload>
    const std::string rest = t.substr(std::strlen("torch.ops."));
    const auto d1 = rest.find('.'), d2 = rest.rfind('.');
    if (d1 == std::string::npos || d2 == d1) throw InputError(fmt::format("{}: cannot read the op name", where));
    const std::string ns = rest.substr(0, d1), name = rest.substr(d1 + 1, d2 - d1 - 1), overload = rest.substr(d2 + 1);
    const std::string full = ns + "::" + name + (overload == "default" ? "" : "." + overload);
    auto handle = c10::Dispatcher::singleton().findSchema(c10::OperatorName(ns + "::" + name, overload == "default" ? "" : overload));
    if (!handle)
      throw InputError(fmt::format("{}: operator {} is not in {} and grassaudit does not provide it (the file was "
                                   "written by {}); build grassaudit against a LibTorch that has it or export the "
                                   "model without it",
                                   where, full, kLibTorch, producer));
    s.op = *handle;
    const auto& schema = handle->schema();
    std::set<std::string> used;
    for (const auto& sa : schema.arguments()) {
      const json* given = nullptr;
      for (const auto& in : inputs)
        if (field(in, "name", where).get<std::string>() == sa.name()) given = &in.at("arg");
      if (given) {
        s.args.push_back(argument(*given, sa.type(), where));
        used.insert(sa.name());
      } else if (sa.default_value()) {
        Arg a;
        a.value = *sa.default_value();
        s.args.push_back(a);
      } else {
        throw InputError(fmt::format("{}: the graph gives no '{}', which {}'s {} needs", where, sa.name(), kLibTorch, full));
      }
    }
    for (const auto& in : inputs) {
      const std::string n = field(in, "name", where).get<std::string>();
      if (!used.count(n))
        throw InputError(fmt::format("{}: argument '{}' is not in {}'s schema of {} (the file was written by {})", where,
                                     n, kLibTorch, full, producer));
    }
    s.returns = schema.returns().size();
    for (const auto& o : outputs) s.outs.push_back(output_of(o, where));
    if (s.outs.size() > s.returns)
      throw InputError(fmt::format("{}: {} outputs, but {}'s {} returns {}", where, s.outs.size(), kLibTorch, full,
                                   s.returns));
  } else {
    throw InputError(fmt::format("{}: calls {}, which grassaudit does not run", where, t));
  }
  // Where the node comes from, for naming where a leak enters (strings; anything else is left).
  if (node.contains("metadata") && node["metadata"].is_object()) {
    const json& md = node["metadata"];
    if (md.contains("nn_module_stack") && md["nn_module_stack"].is_string())
      s.modules = parse_module_stack(md["nn_module_stack"].get<std::string>());
    if (md.contains("stack_trace") && md["stack_trace"].is_string())
      s.frame = innermost_frame(md["stack_trace"].get<std::string>());
  }
  steps.push_back(std::move(s));
}

// Each slot is released after its last read: a long graph keeps only what is still needed.
void ExportedProgram::Impl::release_after_last_read(const std::vector<const Arg*>& final_reads) {
  auto slots_of = [](const Arg& a) {
    std::vector<int> out{a.slot};
    out.insert(out.end(), a.slots.begin(), a.slots.end());
    return out;
  };
  std::vector<std::vector<int>> reads(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    for (const auto& a : steps[i].args)
      for (int s : slots_of(a)) reads[i].push_back(s);
  std::vector<int> kept;
  for (const Arg* a : final_reads)
    for (int s : slots_of(*a)) kept.push_back(s);
  const auto release = releases_after_last_read(nslots, reads, kept);
  for (size_t i = 0; i < steps.size(); ++i) steps[i].release = release[i];
}

// torch.ops.higher_order.<op>: the sub-graphs (as_graph arguments) are read as graphs of their
// own; the other arguments are values of this graph. The ops have no schema: their arguments
// are positional, as torch.export's serializer writes them.
void ExportedProgram::Impl::parse_higher_order(const json& inputs, const json& outputs, Step& s,
                                               const std::string& where) {
  static const std::set<std::string> kRun{"cond", "map_impl", "while_loop", "scan", "wrap_with_set_grad_enabled"};
  const std::string op = s.target.substr(std::strlen("torch.ops.higher_order."));
  if (!kRun.count(op))
    throw InputError(fmt::format("{}: the higher-order op {} is not run by grassaudit (it runs cond, map_impl, "
                                 "while_loop, scan and wrap_with_set_grad_enabled); export without it",
                                 where, op));
  s.k = Step::K::kHigherOrder;
  for (const auto& in : inputs) {
    const json& arg = field(in, "arg", where);
    if (arg.is_object() && arg.contains("as_graph")) s.subgraphs.push_back(parse_subgraph(arg["as_graph"], where));
    else s.args.push_back(plain_argument(arg, where));
  }
  const size_t want_graphs = op == "cond" || op == "while_loop" ? 2 : 1;
  if (s.subgraphs.size() != want_graphs)
    throw InputError(fmt::format("{}: {} takes {} sub-graph(s), the node gives {}", where, op, want_graphs,
                                 s.subgraphs.size()));
  for (const auto& o : outputs) s.outs.push_back(output_of(o, where));
}

// Where one output of a node goes: a tensor, a list of (optional) tensors, or a symbolic value,
// each bound to a new slot; anything else (as_none) is not kept.
Out ExportedProgram::Impl::output_of(const json& o, const std::string& where) {
  auto [k, v] = kind_of(o, "an output");
  Out out;
  if (k == "as_tensor") {
    out.slot = new_slot(field(*v, "name", where).get<std::string>(), where);
  } else if (k == "as_tensors") {
    out.list = true;
    for (const auto& e : *v) out.slots.push_back(new_slot(field(e, "name", where).get<std::string>(), where));
  } else if (k == "as_optional_tensors") {
    out.list = true;
    for (const auto& e : *v) {
      auto [k2, v2] = kind_of(e, "an optional tensor");
      out.slots.push_back(k2 == "as_tensor" ? new_slot(field(*v2, "name", where).get<std::string>(), where) : -1);
    }
  } else if (k == "as_sym_int" || k == "as_sym_bool" || k == "as_sym_float") {
    auto [k2, v2] = kind_of(*v, "a symbolic output");
    if (k2 == "as_name") out.slot = new_slot(v2->get<std::string>(), where);
  }
  return out;
}

size_t ExportedProgram::Impl::parse_subgraph(const json& ga, const std::string& where) {
  SubGraph sg;
  sg.name = ga.is_object() && ga.contains("name") && ga["name"].is_string() ? ga["name"].get<std::string>() : "?";
  const std::string at = fmt::format("{}, sub-graph {}", where, sg.name);
  const json& graph = field(ga, "graph", at);
  sg.graph = std::make_unique<Impl>();
  Impl& g = *sg.graph;
  g.root = root;
  g.producer = producer;
  g.promote = promote;
  for (const auto& in : field(graph, "inputs", at)) {
    auto [k, v] = kind_of(in, "a sub-graph input");
    if (k == "as_tensor") sg.inputs.push_back(g.new_slot(field(*v, "name", at).get<std::string>(), at));
    else if ((k == "as_sym_int" || k == "as_sym_bool") && v->is_object() && v->contains("as_name"))
      sg.inputs.push_back(g.new_slot((*v)["as_name"].get<std::string>(), at));
    else throw InputError(fmt::format("{}: an input of kind {}, which grassaudit does not read", at, k));
  }
  const json& nodes = field(graph, "nodes", at);
  for (size_t i = 0; i < nodes.size(); ++i) g.parse_node(nodes[i], i);
  for (const auto& o : field(graph, "outputs", at)) sg.outputs.push_back(g.plain_argument(o, at));
  std::vector<const Arg*> final_reads;
  for (const auto& o : sg.outputs) final_reads.push_back(&o);
  g.release_after_last_read(final_reads);
  subgraphs.push_back(std::move(sg));
  return subgraphs.size() - 1;
}

}  // namespace grassaudit
