#include "formats/export/export_graph.h"

#include <fmt/format.h>

#include "util/error.h"

// Reading the ExportedProgram around its graph: the range constraints, what each input is (a user
// input, a parameter, a buffer, a constant), where the outputs go, and the output structure.
namespace grassaudit {

using namespace exported;

namespace {

// The range constraints: {"s1": {"min_val": 4, "max_val": 128}} -> s1: {4, 128}; a null
// max_val is unbounded (-1, PyTorch's int_oo).
std::map<std::string, std::pair<int64_t, int64_t>> range_constraints(const json& ep) {
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  const json range_constraints = ep.value("range_constraints", json::object());
  if (!range_constraints.is_object()) throw InputError("the range constraints are not an object");
  for (const auto& [sym, r] : range_constraints.items()) {
    auto bound = [&, &sym = sym, &r = r](const char* key, int64_t none) {
      if (!r.is_object()) throw InputError(fmt::format("the range constraint of {} is not an object", sym));
      if (!r.contains(key) || r[key].is_null()) return none;
      if (!r[key].is_number_integer())
        throw InputError(fmt::format("the range constraint of {}: {} is {}, not an integer", sym, key, r[key].dump()));
      return r[key].get<int64_t>();
    };
    const int64_t lo = bound("min_val", 0), hi = bound("max_val", -1);
    if (hi >= 0 && hi < lo)
      throw InputError(fmt::format("the range constraint of {} is empty: [{}, {}]", sym, lo, hi));
    ranges[sym] = {lo, hi};
  }
  return ranges;
}

// The graph's `what`s ("input", "output") and the signature's specs of them, one to one: calls
// visit(i, the graph's i-th, the spec's kind, its value, "<what> i (<kind>)" for messages).
template <class Visit>
void for_each_spec(const json& graph, const json& sig, const std::string& what, Visit visit) {
  const json& items = field(graph, (what + "s").c_str(), "graph");
  const json& specs = field(sig, (what + "_specs").c_str(), "signature");
  if (items.size() != specs.size())
    throw InputError(fmt::format("the graph has {} {}s but its signature describes {}", items.size(), what,
                                 specs.size()));
  const std::string spec_name = "an " + what + " spec";
  for (size_t i = 0; i < specs.size(); ++i) {
    auto [kind, v] = kind_of(specs[i], spec_name.c_str());
    visit(i, items[i], kind, v, fmt::format("{} {} ({})", what, i, kind));
  }
}

}  // namespace

// The graph's placeholders and what each one is (input_specs, in the same order): a user input
// (its dtype, sizes and the ranges of its symbolic sizes), a parameter, a buffer, a constant.
void ExportedProgram::Impl::parse_inputs(const json& graph, const json& sig,
                                         const std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                                         const std::map<std::string, at::Tensor>& state,
                                         const std::map<std::string, at::Tensor>& consts) {
  const json& tensor_values = graph.value("tensor_values", json::object());
  for_each_spec(graph, sig, "input", [&](size_t i, const json&, const std::string& kind, const json* v,
                                         const std::string& where) {
    InputSource src;
    std::string name;
    auto tensor_named = [&](const std::map<std::string, at::Tensor>& from, const std::string& key,
                            const char* what) -> at::Tensor {
      auto it = from.find(key);
      if (it == from.end())
        throw InputError(fmt::format("the graph reads {} '{}', which the archive does not hold", what, key));
      return it->second;
    };
    // A stored tensor: the placeholder's name under "arg", the tensor's own under `key`, appended
    // to `list` (its value from `find`) as a source of kind `k`.
    auto stored_tensor = [&](const char* key, InputSource::K k, auto& list, auto find) {
      name = field(field(*v, "arg", where), "name", where).get<std::string>();
      const std::string own = field(*v, key, where).get<std::string>();
      src.k = k;
      src.index = list.size();
      list.emplace_back(own, find(own));
    };
    if (kind == "user_input") {
      auto [k2, v2] = kind_of(field(*v, "arg", where), "a user input");
      if (k2 != "as_tensor")
        throw InputError(fmt::format("user input {} is a {}: only tensor inputs are read (export with the other "
                                     "values fixed)",
                                     i, k2));
      name = field(*v2, "name", where).get<std::string>();
      ExportedInput in;
      in.name = name;
      in.shape_known = tensor_values.contains(name);
      if (tensor_values.contains(name)) {
        const json& meta = tensor_values[name];
        in.dtype = scalar_type(field(meta, "dtype", where).get<int64_t>());
        for (const auto& sz : field(meta, "sizes", where)) {
          auto [k3, v3] = kind_of(sz, "a size");
          if (k3 == "as_int") {
            in.sizes.emplace_back(v3->get<int64_t>());
            in.ranges.emplace_back(v3->get<int64_t>(), v3->get<int64_t>());
          } else {
            in.sizes.emplace_back(std::nullopt);
            // A plain symbol: "s0", or its sympy srepr "Symbol('s0', positive=True, integer=True)" (2.6).
            std::string expr = v3->value("expr_str", std::string());
            if (expr.rfind("Symbol('", 0) == 0 && expr.find('\'', 8) != std::string::npos)
              expr = expr.substr(8, expr.find('\'', 8) - 8);
            auto r = ranges.find(expr);
            in.ranges.push_back(is_identifier(expr) && r != ranges.end() ? r->second : std::pair<int64_t, int64_t>{0, -1});
          }
        }
      }
      src.k = InputSource::K::kUser;
      src.index = user_inputs.size();
      user_inputs.push_back(in);
    } else if (kind == "parameter") {
      stored_tensor("parameter_name", InputSource::K::kParameter, parameters,
                    [&](const std::string& p) { return tensor_named(state, p, "parameter"); });
    } else if (kind == "buffer") {
      // Non-persistent buffers travel with the constants.
      stored_tensor("buffer_name", InputSource::K::kBuffer, buffers, [&](const std::string& b) {
        return state.count(b) ? state.at(b) : tensor_named(consts, b, "buffer");
      });
    } else if (kind == "tensor_constant") {
      stored_tensor("tensor_constant_name", InputSource::K::kConstant, constants,
                    [&](const std::string& c) { return tensor_named(consts, c, "tensor constant"); });
    } else if (kind == "constant_input") {
      name = field(*v, "name", where).get<std::string>();
      auto [k2, v2] = kind_of(field(*v, "value", where), "a constant input");
      src.k = InputSource::K::kValue;
      if (k2 == "as_int") src.value = v2->get<int64_t>();
      else if (k2 == "as_float") src.value = float_of(*v2);
      else if (k2 == "as_bool") src.value = v2->get<bool>();
      else if (k2 == "as_string") src.value = v2->get<std::string>();
    } else {
      throw InputError(fmt::format("the graph takes a {} input (a TorchBind object or effect token), which grassaudit "
                                   "does not provide",
                                   kind));
    }
    src.slot = new_slot(name, where);
    sources.push_back(std::move(src));
  });
  if (user_inputs.empty()) throw InputError("the exported forward takes no tensor input");

}

// User outputs (the forward's result) and buffer mutations, in graph order.
void ExportedProgram::Impl::parse_outputs(const json& graph, const json& sig) {
  for_each_spec(graph, sig, "output", [&](size_t, const json& graph_output, const std::string& kind, const json* v,
                                          const std::string& where) {
    OutputSink sink;
    sink.value = plain_argument(graph_output, where);
    if (kind == "user_output") {
      sink.k = OutputSink::K::kUser;
    } else if (kind == "buffer_mutation") {
      sink.k = OutputSink::K::kBuffer;
      const std::string b = field(*v, "buffer_name", where).get<std::string>();
      bool found = false;
      for (size_t j = 0; j < buffers.size(); ++j)
        if (buffers[j].first == b) sink.buffer = j, found = true;
      if (!found) throw InputError(fmt::format("{}: mutates buffer '{}', which the graph does not read", where, b));
    } else {
      throw InputError(fmt::format("the graph has a {} output (a training step's): grassaudit audits forward passes",
                                   kind));
    }
    sinks.push_back(std::move(sink));
  });

}

// The output structure: the root call's out_spec (a one-leaf output when absent).
void ExportedProgram::Impl::parse_out_spec(const json& gm) {
  size_t user_outputs = 0;
  for (const auto& s : sinks) user_outputs += s.k == OutputSink::K::kUser ? 1 : 0;
  for (const auto& entry : gm.value("module_call_graph", json::array()))
    if (entry.value("fqn", std::string("?")).empty() && entry.contains("signature") && !entry["signature"].is_null()) {
      const json spec = json::parse(field(entry["signature"], "out_spec", "the root call").get<std::string>());
      if (!spec.is_array() || spec.size() != 2 || spec[0] != 1)
        throw InputError(fmt::format("the output structure is a pytree spec of protocol {}, not 1",
                                     spec.is_array() && !spec.empty() ? spec[0].dump() : "?"));
      out_spec = parse_spec(spec[1]);
    }
  if (count_leaves(out_spec) != user_outputs)
    throw InputError(fmt::format("the output structure has {} leaves but the graph returns {} user outputs",
                                 count_leaves(out_spec), user_outputs));

}

void ExportedProgram::Impl::parse_program(const json& ep, const std::map<std::string, at::Tensor>& state,
                                          const std::map<std::string, at::Tensor>& consts) {
  if (ep.contains("torch_version") && ep["torch_version"].is_string()) producer = "PyTorch " + ep["torch_version"].get<std::string>();
  const json& sv = field(ep, "schema_version", "the ExportedProgram");
  schema_major = field(sv, "major", "schema_version").get<int64_t>();
  schema_minor = field(sv, "minor", "schema_version").get<int64_t>();
  if (schema_major != 8)
    throw InputError(fmt::format("an ExportedProgram of serde schema {}.{} (written by {}), which grassaudit does not "
                                 "read (it reads schema 8.x: PyTorch 2.5 to 2.9)",
                                 schema_major, schema_minor, producer));
  const json& gm = field(ep, "graph_module", "the ExportedProgram");
  const json& graph = field(gm, "graph", "graph_module");
  const json& sig = field(gm, "signature", "graph_module");
  parse_inputs(graph, sig, range_constraints(ep), state, consts);
  const json& nodes = field(graph, "nodes", "graph");
  for (size_t i = 0; i < nodes.size(); ++i) parse_node(nodes[i], i);

  parse_outputs(graph, sig);
  parse_out_spec(gm);
  std::vector<const Arg*> final_reads;
  for (const auto& s : sinks) final_reads.push_back(&s.value);
  release_after_last_read(final_reads);
}

}  // namespace grassaudit
