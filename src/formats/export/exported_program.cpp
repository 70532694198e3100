#include "formats/export/exported_program.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "formats/torch/torch2_ops.h"
#include "formats/torch/weights_unpickler.h"
#include "formats/torch/zip_reader.h"
#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {

using nlohmann::json;

namespace {

const std::string kLibTorch = std::string("LibTorch ") + TORCH_VERSION;

// Python's json writes the non-finite floats as bare NaN, Infinity and -Infinity (an attention
// mask's masked_fill(-inf) is one), which JSON does not have: outside string literals they are
// quoted before parsing, and float arguments read them back (float_of).
std::string quote_nonfinite(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 64);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::strlen(word);
      if (text.compare(i, n, word) == 0) {
        out += '"';
        out += word;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

double float_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (t == "Infinity") return std::numeric_limits<double>::infinity();
    if (t == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  throw InputError(fmt::format("a float argument that is not a number: {}", v.dump().substr(0, 40)));
}

// The serde schema's ScalarType (torch/_export/serde/schema.py), not c10's numbering.
at::ScalarType scalar_type(int64_t serde) {
  switch (serde) {
    case 1: return at::kByte;
    case 2: return at::kChar;
    case 3: return at::kShort;
    case 4: return at::kInt;
    case 5: return at::kLong;
    case 6: return at::kHalf;
    case 7: return at::kFloat;
    case 8: return at::kDouble;
    case 9: return at::kComplexHalf;
    case 10: return at::kComplexFloat;
    case 11: return at::kComplexDouble;
    case 12: return at::kBool;
    case 13: return at::kBFloat16;
    default: throw InputError(fmt::format("scalar type {} of the serde schema is not read", serde));
  }
}

int64_t serde_layout(int64_t serde) {
  if (serde == 7) return static_cast<int64_t>(at::kStrided);
  if (serde == 1) return static_cast<int64_t>(at::kSparse);
  throw InputError(fmt::format("layout {} of the serde schema is not read (strided tensors only)", serde));
}

int64_t memory_format(int64_t serde) {
  switch (serde) {
    case 1: return static_cast<int64_t>(at::MemoryFormat::Contiguous);
    case 2: return static_cast<int64_t>(at::MemoryFormat::ChannelsLast);
    case 3: return static_cast<int64_t>(at::MemoryFormat::ChannelsLast3d);
    case 4: return static_cast<int64_t>(at::MemoryFormat::Preserve);
    default: throw InputError(fmt::format("memory format {} of the serde schema is not read", serde));
  }
}

// A union of the serde schema: an object with one key.
std::pair<std::string, const json*> kind_of(const json& u, const char* what) {
  if (!u.is_object() || u.size() != 1) throw InputError(fmt::format("{} is not a one-key union: {}", what, u.dump().substr(0, 80)));
  return {u.begin().key(), &u.begin().value()};
}

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw InputError(fmt::format("{} has no '{}'", where, key));
  return j.at(key);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// How one argument of a step is built at run time.
struct Arg {
  enum class K { kConst, kSlot, kSlotList, kOptSlotList, kSymIntList } k = K::kConst;
  c10::IValue value;          // kConst
  int slot = -1;              // kSlot
  std::vector<int> slots;     // lists: -1 = None (optional list) or the constant in ints (SymInt list)
  std::vector<int64_t> ints;  // kSymIntList: the constants
  bool float32_dtype = false; // a dtype argument that says float32 (promoted under float64)
  bool to_double = false;     // a float argument given as a symbolic int
  bool to_tensor = false;     // a Tensor argument given as a number (a SymInt divisor: x / L)
};

// A number passed where the schema wants a Tensor, as Python's argument parser passes it: a
// 0-dim tensor marked as a wrapped number, so type promotion treats it as a scalar.
at::Tensor wrapped_number(const c10::IValue& v) {
  at::Tensor t = v.isDouble() ? at::scalar_tensor(v.toDouble(), at::kDouble)
                 : v.isBool() ? at::scalar_tensor(static_cast<int64_t>(v.toBool()), at::kLong)
                              : at::scalar_tensor(v.toInt(), at::kLong);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// Where one return of a step goes.
struct Out {
  int slot = -1;
  std::vector<int> slots;  // a list return: each element (-1: not kept)
  bool list = false;
};

struct Step {
  enum class K { kOp, kSymSize, kSymNumel, kSymStride, kOperator, kAssertScalar, kConstrainRange, kNoop, kHigherOrder }
      k = K::kOp;
  std::string target, name;
  std::vector<size_t> subgraphs;  // kHigherOrder: its sub-graphs, in argument order
  c10::optional<c10::OperatorHandle> op;
  size_t returns = 0;
  std::vector<Arg> args;
  std::vector<Out> outs;
  std::vector<int> release;  // slots whose last read is this step
};

struct Spec {  // the pytree of the user outputs
  enum class K { kLeaf, kTuple, kList, kDict } k = K::kLeaf;
  std::vector<std::string> keys;
  std::vector<Spec> children;
};

// The sources of the graph's inputs, in graph order.
struct InputSource {
  enum class K { kUser, kParameter, kBuffer, kConstant, kValue } k;
  size_t index = 0;  // into user inputs / parameters / buffers / constants
  int slot = -1;
  c10::IValue value;  // kValue
};

struct OutputSink {
  enum class K { kUser, kBuffer } k;
  Arg value;
  size_t buffer = 0;
};

}  // namespace

struct ExportedProgram::Impl {
  std::string producer = "an unknown PyTorch", layout;
  int64_t schema_major = 0, schema_minor = 0;
  std::vector<ExportedInput> user_inputs;
  std::vector<std::pair<std::string, at::Tensor>> parameters, buffers, constants;
  std::vector<InputSource> sources;
  std::vector<Step> steps;
  std::vector<OutputSink> sinks;
  Spec out_spec;
  std::unordered_map<std::string, int> slot_of;
  std::set<int> defined;
  int nslots = 0;
  bool promote = false;
  std::vector<std::string> census;

  int new_slot(const std::string& name, const std::string& where) {
    if (slot_of.count(name)) throw InputError(fmt::format("{} defines '{}' a second time", where, name));
    slot_of[name] = nslots;
    defined.insert(nslots);
    return nslots++;
  }
  int read_slot(const std::string& name, const std::string& where) {
    auto it = slot_of.find(name);
    if (it == slot_of.end()) throw InputError(fmt::format("{} reads '{}', which no earlier node computes", where, name));
    return it->second;
  }

  // A higher-order op's sub-graph (torch.cond's branches, a loop's body, ...): a graph of its own,
  // with its own names, run on the values the op passes it.
  struct SubGraph {
    std::string name;
    std::unique_ptr<Impl> graph;
    std::vector<int> inputs;   // the sub-graph's placeholders, in order
    std::vector<Arg> outputs;  // what it returns, in order
  };
  std::vector<SubGraph> subgraphs;
  Impl* root = this;  // the program's graph: where the census goes

  Arg argument(const json& u, const c10::TypePtr& type, const std::string& where);
  Arg plain_argument(const json& u, const std::string& where);
  void parse_program(const json& ep, const std::map<std::string, at::Tensor>& state,
                     const std::map<std::string, at::Tensor>& consts);
  void parse_node(const json& node, size_t index);
  void parse_higher_order(const json& inputs, const json& outputs, Step& s, const std::string& where);
  Out output_of(const json& output, const std::string& where);
  size_t parse_subgraph(const json& graph_argument, const std::string& where);
  void release_after_last_read(const std::vector<const Arg*>& final_reads);
  c10::IValue value(const Arg& a, std::vector<c10::IValue>& env) const;
  void execute(std::vector<c10::IValue>& env) const;
  std::vector<c10::IValue> call(size_t subgraph, const std::vector<c10::IValue>& inputs) const;
  std::vector<c10::IValue> higher_order(const Step& s, const std::vector<c10::IValue>& args,
                                        const std::string& where) const;
  template <class F>
  void for_each_graph(F f) const {
    f(*this);
    for (const auto& g : subgraphs) g.graph->for_each_graph(f);
  }
  void set_promote(bool on) {
    promote = on;
    for (auto& g : subgraphs) g.graph->set_promote(on);
  }
};

ExportedProgram::ExportedProgram() : impl_(std::make_unique<Impl>()) {}
ExportedProgram::~ExportedProgram() = default;

const std::vector<ExportedInput>& ExportedProgram::inputs() const { return impl_->user_inputs; }
std::vector<std::pair<std::string, at::Tensor>>& ExportedProgram::parameters() { return impl_->parameters; }
std::vector<std::pair<std::string, at::Tensor>>& ExportedProgram::buffers() { return impl_->buffers; }
std::vector<std::pair<std::string, at::Tensor>>& ExportedProgram::constants() { return impl_->constants; }
std::vector<std::string> ExportedProgram::op_census() const {
  std::vector<std::string> unique;
  for (const auto& t : impl_->census)
    if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(t);
  return unique;
}
bool ExportedProgram::has_no_grad_region() const {
  bool found = false;
  impl_->for_each_graph([&](const Impl& g) {
    for (const auto& s : g.steps)
      if (s.k == Step::K::kHigherOrder && s.target == "torch.ops.higher_order.wrap_with_set_grad_enabled" &&
          !s.args.empty() && !(s.args[0].k == Arg::K::kConst && s.args[0].value.isBool() && s.args[0].value.toBool()))
        found = true;
  });
  return found;
}

bool ExportedProgram::mutates_buffers() const {
  for (const auto& s : impl_->sinks)
    if (s.k == OutputSink::K::kBuffer) return true;
  return false;
}

std::string ExportedProgram::describe() const {
  return fmt::format("{}, schema {}.{}, {} layout", impl_->producer, impl_->schema_major, impl_->schema_minor,
                     impl_->layout);
}

int ExportedProgram::promote_dtype_arguments(bool on) {
  impl_->set_promote(on);
  int n = 0;
  impl_->for_each_graph([&](const Impl& g) {
    for (const auto& s : g.steps)
      for (const auto& a : s.args) n += a.float32_dtype ? 1 : 0;
  });
  return n;
}

// ---------------------------------------------------------------------------------------------
// Reading the graph.

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
  steps.push_back(std::move(s));
}

namespace {

Spec parse_spec(const json& j) {
  Spec s;
  if (!j.is_object()) throw InputError("the output structure (out_spec) is not a pytree spec");
  const json& type = j.value("type", json());
  const json& children = j.value("children_spec", json::array());
  if (type.is_null()) return s;  // a leaf
  const std::string t = type.get<std::string>();
  if (t == "builtins.tuple" || t == "collections.namedtuple") {
    s.k = Spec::K::kTuple;
  } else if (t == "builtins.list" || t == "torch.fx.immutable_collections.immutable_list") {
    s.k = Spec::K::kList;
  } else if (t == "builtins.dict" || t == "collections.OrderedDict" ||
             t == "torch.fx.immutable_collections.immutable_dict") {
    s.k = Spec::K::kDict;
    const json ctx = json::parse(j.at("context").get<std::string>());
    for (const auto& k : ctx) {
      if (!k.is_string()) throw InputError("the output is a dict with keys that are not strings: not read");
      s.keys.push_back(k.get<std::string>());
    }
  } else {
    throw InputError(fmt::format("the output is a {}, which grassaudit does not read (tensors, tuples, lists and "
                                 "dicts of them)",
                                 t));
  }
  for (const auto& c : children) s.children.push_back(parse_spec(c));
  if (s.k == Spec::K::kDict && s.keys.size() != s.children.size())
    throw InputError("the output dict's keys and values do not pair up");
  return s;
}

size_t count_leaves(const Spec& s) {
  if (s.k == Spec::K::kLeaf) return 1;
  size_t n = 0;
  for (const auto& c : s.children) n += count_leaves(c);
  return n;
}

c10::IValue build(const Spec& s, const std::vector<c10::IValue>& leaves, size_t& next) {
  switch (s.k) {
    case Spec::K::kLeaf: return leaves.at(next++);
    case Spec::K::kTuple: {
      std::vector<c10::IValue> items;
      for (const auto& c : s.children) items.push_back(build(c, leaves, next));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    case Spec::K::kList: {
      c10::impl::GenericList l(c10::AnyType::get());
      for (const auto& c : s.children) l.push_back(build(c, leaves, next));
      return l;
    }
    case Spec::K::kDict: {
      c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
      for (size_t i = 0; i < s.children.size(); ++i) d.insert(s.keys[i], build(s.children[i], leaves, next));
      return d;
    }
  }
  return {};
}

// A tensor stored raw (the packaged layout): dtype, sizes, strides and offset from its TensorMeta.
at::Tensor raw_tensor(const std::string& blob, const json& meta, const std::string& what) {
  const at::ScalarType dtype = scalar_type(field(meta, "dtype", what).get<int64_t>());
  auto ints = [&](const char* key) {
    std::vector<int64_t> out;
    for (const auto& s : field(meta, key, what)) {
      auto [k, v] = kind_of(s, "a size");
      if (k != "as_int") throw InputError(fmt::format("{}: a symbolic {} in a stored tensor", what, key));
      out.push_back(v->get<int64_t>());
    }
    return out;
  };
  const auto sizes = ints("sizes"), strides = ints("strides");
  int64_t offset = 0;
  if (meta.contains("storage_offset")) {
    auto [k, v] = kind_of(meta.at("storage_offset"), "a storage offset");
    if (k == "as_int") offset = v->get<int64_t>();
  }
  const auto esize = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t numel = static_cast<int64_t>(blob.size()) / esize;
  if (sizes.size() != strides.size() || offset < 0) throw InputError(fmt::format("{}: inconsistent tensor metadata", what));
  int64_t last = offset;
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) throw InputError(fmt::format("{}: a negative size or stride", what));
    if (sizes[d] == 0) empty = true;
    else if (sizes[d] > 1 && strides[d] > (INT64_MAX / 2 - last) / (sizes[d] - 1))
      throw InputError(fmt::format("{}: a tensor larger than memory", what));
    else last += (sizes[d] - 1) * strides[d];
  }
  if (!empty && last >= numel)
    throw InputError(fmt::format("{}: [{}] needs more than the {} bytes stored", what, fmt::join(sizes, ", "), blob.size()));
  at::Tensor storage = at::empty({numel}, at::TensorOptions().dtype(dtype));
  if (numel > 0) std::memcpy(storage.data_ptr(), blob.data(), static_cast<size_t>(numel * esize));
  return storage.as_strided(sizes, strides, offset);
}

std::map<std::string, at::Tensor> read_payloads(const ZipReader& zip, const std::string& config_path,
                                                const std::string& dir, const std::string& what) {
  std::map<std::string, at::Tensor> out;
  if (!zip.find(config_path)) return out;
  json config;
  try {
    config = json::parse(zip.read(config_path));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: {}", config_path, e.what()));
  }
  for (const auto& [fqn, meta] : field(config, "config", config_path).items()) {
    const std::string path = dir + field(meta, "path_name", config_path).get<std::string>();
    const std::string blob = zip.read(path);
    const std::string where = fmt::format("{} '{}' ({})", what, fqn, path);
    if (meta.value("use_pickle", false)) out[fqn] = read_saved_tensor(blob, where);
    else if (meta.contains("tensor_meta") && !meta["tensor_meta"].is_null()) out[fqn] = raw_tensor(blob, meta["tensor_meta"], where);
    else throw InputError(fmt::format("{}: neither a tensor nor a pickle (a TorchBind object?): not read", where));
  }
  return out;
}

}  // namespace

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
  const json& tensor_values = graph.value("tensor_values", json::object());
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  const json range_constraints = ep.value("range_constraints", json::object());
  // {"s1": {"min_val": 4, "max_val": 128}}; a null max_val is unbounded (int_oo).
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

  // Inputs: the graph's placeholders, what each one is (input_specs, in the same order).
  const json& graph_inputs = field(graph, "inputs", "graph");
  const json& input_specs = field(sig, "input_specs", "signature");
  if (graph_inputs.size() != input_specs.size())
    throw InputError(fmt::format("the graph has {} inputs but its signature describes {}", graph_inputs.size(),
                                 input_specs.size()));
  for (size_t i = 0; i < input_specs.size(); ++i) {
    auto [kind, v] = kind_of(input_specs[i], "an input spec");
    const std::string where = fmt::format("input {} ({})", i, kind);
    InputSource src;
    std::string name;
    auto tensor_named = [&](const std::map<std::string, at::Tensor>& from, const std::string& key,
                            const char* what) -> at::Tensor {
      auto it = from.find(key);
      if (it == from.end())
        throw InputError(fmt::format("the graph reads {} '{}', which the archive does not hold", what, key));
      return it->second;
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
      name = field(field(*v, "arg", where), "name", where).get<std::string>();
      const std::string p = field(*v, "parameter_name", where).get<std::string>();
      src.k = InputSource::K::kParameter;
      src.index = parameters.size();
      parameters.emplace_back(p, tensor_named(state, p, "parameter"));
    } else if (kind == "buffer") {
      name = field(field(*v, "arg", where), "name", where).get<std::string>();
      const std::string b = field(*v, "buffer_name", where).get<std::string>();
      src.k = InputSource::K::kBuffer;
      src.index = buffers.size();
      // Non-persistent buffers travel with the constants.
      buffers.emplace_back(b, state.count(b) ? state.at(b) : tensor_named(consts, b, "buffer"));
    } else if (kind == "tensor_constant") {
      name = field(field(*v, "arg", where), "name", where).get<std::string>();
      const std::string c = field(*v, "tensor_constant_name", where).get<std::string>();
      src.k = InputSource::K::kConstant;
      src.index = constants.size();
      constants.emplace_back(c, tensor_named(consts, c, "tensor constant"));
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
  }
  if (user_inputs.empty()) throw InputError("the exported forward takes no tensor input");

  const json& nodes = field(graph, "nodes", "graph");
  for (size_t i = 0; i < nodes.size(); ++i) parse_node(nodes[i], i);

  // Outputs: user outputs (the forward's result) and buffer mutations, in graph order.
  const json& graph_outputs = field(graph, "outputs", "graph");
  const json& output_specs = field(sig, "output_specs", "signature");
  if (graph_outputs.size() != output_specs.size())
    throw InputError(fmt::format("the graph has {} outputs but its signature describes {}", graph_outputs.size(),
                                 output_specs.size()));
  for (size_t i = 0; i < output_specs.size(); ++i) {
    auto [kind, v] = kind_of(output_specs[i], "an output spec");
    const std::string where = fmt::format("output {} ({})", i, kind);
    OutputSink sink;
    sink.value = plain_argument(graph_outputs[i], where);
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
  }

  // The output structure: the root call's out_spec (a one-leaf output when absent).
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

  std::vector<const Arg*> final_reads;
  for (const auto& s : sinks) final_reads.push_back(&s.value);
  release_after_last_read(final_reads);
}

// Each slot is released after its last read: a long graph keeps only what is still needed.
void ExportedProgram::Impl::release_after_last_read(const std::vector<const Arg*>& final_reads) {
  std::vector<int> last(nslots, -1);
  auto mark = [&](const Arg& a, int step) {
    if (a.slot >= 0) last[a.slot] = step;
    for (int s : a.slots)
      if (s >= 0) last[s] = step;
  };
  for (size_t i = 0; i < steps.size(); ++i)
    for (const auto& a : steps[i].args) mark(a, static_cast<int>(i));
  for (const Arg* a : final_reads) mark(*a, static_cast<int>(steps.size()));
  for (int slot = 0; slot < nslots; ++slot)
    if (last[slot] >= 0 && last[slot] < static_cast<int>(steps.size())) steps[last[slot]].release.push_back(slot);
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

std::unique_ptr<ExportedProgram> ExportedProgram::load(const std::string& path) {
  ensure_torch2_ops();  // the 2.x ops this LibTorch lacks, registered as for TorchScript files
  std::unique_ptr<ExportedProgram> ep(new ExportedProgram());
  Impl& im = *ep->impl_;
  auto zip = ZipReader::open(path);
  if (!zip) throw InputError("a zip file whose directory cannot be read (truncated or damaged?)");
  json program;
  std::map<std::string, at::Tensor> state, consts;
  auto parse_json = [](const std::string& text, const std::string& what) {
    try {
      return json::parse(quote_nonfinite(text));
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{} is not valid JSON: {}", what, first_meaningful_line(e.what())));
    }
  };
  if (zip->find("serialized_exported_program.json")) {
    im.layout = "flat";
    if (zip->find("version")) {
      const std::string v = trim(zip->read("version"));
      if (v.rfind("8.", 0) != 0)
        throw InputError(fmt::format("a torch.export archive of schema version {}, which grassaudit does not read (it "
                                     "reads 8.x: PyTorch 2.5 to 2.9)",
                                     v.substr(0, 32)));
    }
    program = parse_json(zip->read("serialized_exported_program.json"), "serialized_exported_program.json");
    for (auto& [k, t] : read_saved_tensor_dict(zip->find("serialized_state_dict.pt") ? zip->read("serialized_state_dict.pt") : "",
                                               "serialized_state_dict.pt"))
      state[k] = t;
    for (auto& [k, t] : read_saved_tensor_dict(zip->find("serialized_constants.pt") ? zip->read("serialized_constants.pt") : "",
                                               "serialized_constants.pt"))
      consts[k] = t;
  } else if (zip->find("archive_format")) {
    im.layout = "packaged";
    const std::string format = trim(zip->read("archive_format"));
    if (format != "pt2")
      throw InputError(fmt::format("an archive of format '{}', which grassaudit does not read (it reads 'pt2')",
                                   format.substr(0, 32)));
    if (zip->find("archive_version")) {
      const std::string v = trim(zip->read("archive_version"));
      if (v != "0")
        throw InputError(fmt::format("a PT2 archive of version {}, which grassaudit does not read (it reads version 0, "
                                     "the published PT2 archive spec)",
                                     v.substr(0, 32)));
    }
    std::vector<std::string> models;
    const std::string prefix = zip->root().empty() ? "models/" : zip->root() + "/models/";
    for (const auto& e : zip->entries())
      if (e.name.rfind(prefix, 0) == 0 && e.name.size() > prefix.size() + 5 &&
          e.name.compare(e.name.size() - 5, 5, ".json") == 0 && e.name.find('/', prefix.size()) == std::string::npos)
        models.push_back(e.name.substr(prefix.size(), e.name.size() - prefix.size() - 5));
    if (models.empty()) throw InputError("a PT2 archive without a model (no models/*.json): an AOTInductor package?");
    std::string model = models[0];
    if (models.size() > 1) {
      if (std::find(models.begin(), models.end(), "model") == models.end())
        throw InputError(fmt::format("a PT2 archive of {} models ({}): grassaudit audits one; save one model per file",
                                     models.size(), fmt::join(models, ", ")));
      model = "model";
    }
    program = parse_json(zip->read("models/" + model + ".json"), "models/" + model + ".json");
    if (!program.contains("graph_module"))
      throw InputError(fmt::format("models/{}.json is not a serialized ExportedProgram (no graph_module)", model));
    state = read_payloads(*zip, "data/weights/" + model + "_weights_config.json", "data/weights/", "weight");
    if (state.empty())
      state = read_payloads(*zip, "data/weights/" + model + "_model_param_config.json", "data/weights/", "weight");
    consts = read_payloads(*zip, "data/constants/" + model + "_constants_config.json", "data/constants/", "constant");
    if (consts.empty())
      consts = read_payloads(*zip, "data/constants/" + model + "_model_constants_config.json", "data/constants/",
                             "constant");
  } else {
    throw InputError("a zip file that is not a torch.export archive");
  }
  try {
    im.parse_program(program, state, consts);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("the serialized ExportedProgram ({}) is malformed: {}", im.producer,
                                 first_meaningful_line(e.what())));
  }
  return ep;
}

// ---------------------------------------------------------------------------------------------
// Running it.

c10::IValue ExportedProgram::Impl::value(const Arg& a, std::vector<c10::IValue>& env) const {
  switch (a.k) {
    case Arg::K::kConst:
      if (a.float32_dtype && promote) return static_cast<int64_t>(at::kDouble);
      if (a.to_tensor) return wrapped_number(a.value);
      return a.value;
    case Arg::K::kSlot:
      if (a.to_double && env[a.slot].isInt()) return static_cast<double>(env[a.slot].toInt());
      if (a.to_tensor && !env[a.slot].isTensor()) return wrapped_number(env[a.slot]);
      return env[a.slot];
    case Arg::K::kSlotList: {
      c10::List<at::Tensor> l;
      l.reserve(a.slots.size());
      for (int s : a.slots) l.push_back(env[s].toTensor());
      return l;
    }
    case Arg::K::kOptSlotList: {
      c10::List<c10::optional<at::Tensor>> l;
      for (int s : a.slots) l.push_back(s >= 0 ? c10::optional<at::Tensor>(env[s].toTensor()) : c10::nullopt);
      return l;
    }
    case Arg::K::kSymIntList: {
      std::vector<int64_t> v(a.slots.size());
      for (size_t i = 0; i < v.size(); ++i) v[i] = a.slots[i] >= 0 ? env[a.slots[i]].toInt() : a.ints[i];
      return v;
    }
  }
  return {};
}

namespace {

double num(const c10::IValue& v) {
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isDouble()) return v.toDouble();
  if (v.isBool()) return v.toBool() ? 1 : 0;
  throw InputError("a symbolic value that is not a number");
}

int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) throw InputError("a symbolic size divides by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

c10::IValue operator_value(const std::string& op, const std::vector<c10::IValue>& a, const std::string& node) {
  auto need = [&](size_t n) {
    if (a.size() != n) throw InputError(fmt::format("{}: {} takes {} arguments, got {}", node, op, n, a.size()));
  };
  const bool ints = std::all_of(a.begin(), a.end(), [](const c10::IValue& v) { return v.isInt() || v.isBool(); });
  auto i = [&](size_t k) { return a[k].isBool() ? int64_t{a[k].toBool()} : a[k].toInt(); };
  const std::string f = op.substr(op.find('.') + 1);
  if (f == "add" || f == "sub" || f == "mul" || f == "floordiv" || f == "mod" || f == "pow" || f == "sym_max" ||
      f == "sym_min") {
    need(2);
    if (ints) {
      const int64_t x = i(0), y = i(1);
      if (f == "add") return x + y;
      if (f == "sub") return x - y;
      if (f == "mul") return x * y;
      if (f == "floordiv") return floordiv(x, y);
      if (f == "mod") {
        if (y == 0) throw InputError(fmt::format("{}: a symbolic size modulo zero", node));
        return x - floordiv(x, y) * y;
      }
      if (f == "sym_max") return std::max(x, y);
      if (f == "sym_min") return std::min(x, y);
      if (f == "pow" && y >= 0) {
        int64_t r = 1;
        for (int64_t k = 0; k < y; ++k) r *= x;
        return r;
      }
    }
    const double x = num(a[0]), y = num(a[1]);
    if (f == "add") return x + y;
    if (f == "sub") return x - y;
    if (f == "mul") return x * y;
    if (f == "floordiv") return std::floor(x / y);
    if (f == "mod") return x - std::floor(x / y) * y;
    if (f == "pow") return std::pow(x, y);
    if (f == "sym_max") return std::max(x, y);
    return std::min(x, y);
  }
  if (f == "truediv") {
    need(2);
    return num(a[0]) / num(a[1]);
  }
  if (f == "eq" || f == "ne" || f == "lt" || f == "le" || f == "gt" || f == "ge") {
    need(2);
    const double x = num(a[0]), y = num(a[1]);
    if (f == "eq") return x == y;
    if (f == "ne") return x != y;
    if (f == "lt") return x < y;
    if (f == "le") return x <= y;
    if (f == "gt") return x > y;
    return x >= y;
  }
  if (f == "and_" || f == "or_") {
    need(2);
    if (a[0].isBool() && a[1].isBool()) return f == "and_" ? (a[0].toBool() && a[1].toBool()) : (a[0].toBool() || a[1].toBool());
    return f == "and_" ? (i(0) & i(1)) : (i(0) | i(1));
  }
  if (f == "neg") {
    need(1);
    return a[0].isInt() ? c10::IValue(-a[0].toInt()) : c10::IValue(-num(a[0]));
  }
  if (f == "not_" || f == "sym_not") {
    need(1);
    return !static_cast<bool>(num(a[0]));
  }
  if (f == "sym_float") {
    need(1);
    return num(a[0]);
  }
  if (f == "sym_int" || f == "trunc") {
    need(1);
    return static_cast<int64_t>(std::trunc(num(a[0])));
  }
  if (f == "ceil" || f == "floor") {
    need(1);
    return static_cast<int64_t>(f == "ceil" ? std::ceil(num(a[0])) : std::floor(num(a[0])));
  }
  if (f == "sym_sqrt" || f == "sqrt") {
    need(1);
    return std::sqrt(num(a[0]));
  }
  throw InputError(fmt::format("{}: the symbolic operation {} is not evaluated by grassaudit", node, op));
}

}  // namespace

// Runs the graph's steps on `env` (its inputs bound): each op through the dispatcher, symbolic
// arithmetic in C++, higher-order ops by running their sub-graphs.
void ExportedProgram::Impl::execute(std::vector<c10::IValue>& env) const {
  std::vector<c10::IValue> stack;
  for (size_t si = 0; si < steps.size(); ++si) {
    const Step& s = steps[si];
    auto where = [&]() { return fmt::format("node {} ({})", s.name.empty() ? "?" : s.name, s.target); };
    switch (s.k) {
      case Step::K::kOp: {
        stack.clear();
        for (const auto& a : s.args) stack.push_back(value(a, env));
        try {
          s.op->callBoxed(&stack);
        } catch (const c10::Error& e) {
          throw InputError(fmt::format("{} failed: {}", where(), first_meaningful_line(e.what_without_backtrace())));
        } catch (const std::exception& e) {
          throw InputError(fmt::format("{} failed: {}", where(), first_meaningful_line(e.what())));
        }
        for (size_t r = 0; r < s.outs.size() && r < stack.size(); ++r) {
          const Out& o = s.outs[r];
          if (!o.list) {
            if (o.slot >= 0) env[o.slot] = std::move(stack[r]);
            continue;
          }
          const auto l = stack[r].toTensorVector();
          if (l.size() != o.slots.size())
            throw InputError(fmt::format("{} returned {} tensors, the graph names {}", where(), l.size(), o.slots.size()));
          for (size_t k = 0; k < l.size(); ++k)
            if (o.slots[k] >= 0) env[o.slots[k]] = l[k];
        }
        break;
      }
      case Step::K::kSymSize:
      case Step::K::kSymStride:
      case Step::K::kSymNumel: {
        const c10::IValue t = value(s.args.at(0), env);
        if (!t.isTensor()) throw InputError(fmt::format("{}: not given a tensor", where()));
        int64_t v;
        if (s.k == Step::K::kSymNumel) {
          v = t.toTensor().numel();
        } else {
          const int64_t dim = value(s.args.at(1), env).toInt();
          const int64_t nd = t.toTensor().dim();
          if (dim < -nd || dim >= nd) throw InputError(fmt::format("{}: dimension {} of a {}-d tensor", where(), dim, nd));
          v = s.k == Step::K::kSymSize ? t.toTensor().size(dim) : t.toTensor().stride(dim);
        }
        if (!s.outs.empty() && s.outs[0].slot >= 0) env[s.outs[0].slot] = v;
        break;
      }
      case Step::K::kOperator: {
        std::vector<c10::IValue> a;
        for (const auto& arg : s.args) a.push_back(value(arg, env));
        c10::IValue v = operator_value(s.target, a, where());
        if (!s.outs.empty() && s.outs[0].slot >= 0) env[s.outs[0].slot] = std::move(v);
        break;
      }
      case Step::K::kAssertScalar: {
        const c10::IValue c = value(s.args.at(0), env);
        if (!static_cast<bool>(num(c))) {
          const std::string msg = s.args.size() > 1 && s.args[1].k == Arg::K::kConst && s.args[1].value.isString()
                                      ? s.args[1].value.toStringRef()
                                      : "";
          throw InputError(fmt::format("a runtime assert of the exported program fails at these input sizes: {}",
                                       msg.empty() ? s.name : msg));
        }
        break;
      }
      case Step::K::kHigherOrder: {
        std::vector<c10::IValue> a;
        for (const auto& arg : s.args) a.push_back(value(arg, env));
        std::vector<c10::IValue> r = higher_order(s, a, where());
        if (s.outs.size() == 1 && s.outs[0].list) {
          const Out& o = s.outs[0];
          if (r.size() != o.slots.size())
            throw InputError(fmt::format("{} returned {} values, the graph names {}", where(), r.size(), o.slots.size()));
          for (size_t k = 0; k < r.size(); ++k)
            if (o.slots[k] >= 0) env[o.slots[k]] = std::move(r[k]);
        } else {
          if (r.size() < s.outs.size())
            throw InputError(fmt::format("{} returned {} values, the graph names {}", where(), r.size(), s.outs.size()));
          for (size_t k = 0; k < s.outs.size(); ++k)
            if (s.outs[k].slot >= 0) env[s.outs[k].slot] = std::move(r[k]);
        }
        break;
      }
      case Step::K::kConstrainRange:
      case Step::K::kNoop: break;
    }
    for (int slot : s.release) env[slot] = c10::IValue();
  }
}

std::vector<c10::IValue> ExportedProgram::Impl::call(size_t index, const std::vector<c10::IValue>& inputs) const {
  const SubGraph& sg = subgraphs.at(index);
  if (inputs.size() != sg.inputs.size())
    throw InputError(fmt::format("sub-graph {} takes {} inputs, given {}", sg.name, sg.inputs.size(), inputs.size()));
  std::vector<c10::IValue> env(sg.graph->nslots);
  for (size_t i = 0; i < inputs.size(); ++i) env[sg.inputs[i]] = inputs[i];
  sg.graph->execute(env);
  std::vector<c10::IValue> out;
  out.reserve(sg.outputs.size());
  for (const auto& o : sg.outputs) out.push_back(sg.graph->value(o, env));
  return out;
}

namespace {

std::vector<c10::IValue> tensors_of(const c10::IValue& v, const std::string& where) {
  std::vector<c10::IValue> out;
  if (v.isTensorList()) {
    for (const auto& t : v.toTensorVector()) out.emplace_back(t);
  } else if (v.isTensor()) {
    out.push_back(v);
  } else if (!v.isNone()) {
    throw InputError(fmt::format("{}: expected a list of tensors", where));
  }
  return out;
}

bool truth(const c10::IValue& v, const std::string& where) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.numel() != 1) throw InputError(fmt::format("{}: a condition of {} elements", where, t.numel()));
    return t.item().toBool();
  }
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  throw InputError(fmt::format("{}: a condition that is neither a tensor nor a boolean", where));
}

std::vector<c10::IValue> concat(std::vector<c10::IValue> a, const std::vector<c10::IValue>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// The higher-order ops as torch/_higher_order_ops defines their eager (dense) semantics.
std::vector<c10::IValue> ExportedProgram::Impl::higher_order(const Step& s, const std::vector<c10::IValue>& a,
                                                             const std::string& where) const {
  const std::string op = s.target.substr(std::strlen("torch.ops.higher_order."));
  auto need = [&](size_t n) {
    if (a.size() < n) throw InputError(fmt::format("{}: {} values given, {} needs {}", where, a.size(), op, n));
  };
  if (op == "cond") {  // cond(pred, true_graph, false_graph, operands)
    need(2);
    return call(s.subgraphs[truth(a[0], where) ? 0 : 1], tensors_of(a[1], where));
  }
  if (op == "wrap_with_set_grad_enabled") {  // (enabled, graph, *args)
    need(1);
    at::AutoGradMode mode(truth(a[0], where));
    return call(s.subgraphs[0], std::vector<c10::IValue>(a.begin() + 1, a.end()));
  }
  if (op == "while_loop") {  // (cond_graph, body_graph, carried_inputs, additional_inputs)
    need(2);
    std::vector<c10::IValue> carried = tensors_of(a[0], where);
    const std::vector<c10::IValue> extra = tensors_of(a[1], where);
    while (true) {
      const auto c = call(s.subgraphs[0], concat(carried, extra));
      if (c.size() != 1) throw InputError(fmt::format("{}: the condition returns {} values", where, c.size()));
      if (!truth(c[0], where)) break;
      auto next = call(s.subgraphs[1], concat(carried, extra));
      if (next.size() != carried.size())
        throw InputError(fmt::format("{}: the body returns {} values for {} carried", where, next.size(), carried.size()));
      carried = std::move(next);
    }
    return carried;
  }
  if (op == "map_impl") {  // (graph, xs, pos_args): the graph on each slice of xs along dim 0, stacked
    need(2);
    const std::vector<c10::IValue> xs = tensors_of(a[0], where), rest = tensors_of(a[1], where);
    if (xs.empty()) throw InputError(fmt::format("{}: nothing to map over", where));
    const int64_t n = xs[0].toTensor().size(0);
    std::vector<std::vector<at::Tensor>> per_output;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<c10::IValue> in;
      for (const auto& x : xs) in.emplace_back(x.toTensor().select(0, i));
      const auto out = call(s.subgraphs[0], concat(in, rest));
      if (per_output.empty()) per_output.resize(out.size());
      if (out.size() != per_output.size()) throw InputError(fmt::format("{}: the body's outputs vary", where));
      for (size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k].toTensor());
    }
    std::vector<c10::IValue> result;
    for (auto& ts : per_output) result.emplace_back(at::stack(ts, 0));
    return result;
  }
  if (op == "scan") {  // (combine_graph, init, xs, dim, reverse, additional_inputs)
    need(5);
    std::vector<c10::IValue> carry = tensors_of(a[0], where);
    const std::vector<c10::IValue> xs = tensors_of(a[1], where);
    const int64_t dim = a[2].toInt();
    const bool reverse = truth(a[3], where);
    const std::vector<c10::IValue> extra = a.size() > 4 ? tensors_of(a[4], where) : std::vector<c10::IValue>{};
    if (xs.empty()) return carry;
    const int64_t n = xs[0].toTensor().size(dim);
    std::vector<std::vector<at::Tensor>> ys;  // per output, per step (in step order)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = reverse ? n - 1 - i : i;
      std::vector<c10::IValue> in = carry;
      for (const auto& x : xs) in.emplace_back(x.toTensor().select(dim, t));
      const auto out = call(s.subgraphs[0], concat(in, extra));
      if (out.size() < carry.size()) throw InputError(fmt::format("{}: the combine graph returns too few values", where));
      carry.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(carry.size()));
      if (ys.empty()) ys.resize(out.size() - carry.size());
      for (size_t k = 0; k < ys.size(); ++k) ys[k].push_back(out[carry.size() + k].toTensor());
    }
    std::vector<c10::IValue> result = carry;
    for (auto& y : ys) {
      if (reverse) std::reverse(y.begin(), y.end());  // ys[t] is the output at position t
      result.emplace_back(at::stack(y, 0));
    }
    return result;
  }
  throw InputError(fmt::format("{}: the higher-order op {} is not run by grassaudit", where, op));
}

c10::IValue ExportedProgram::run(const std::vector<at::Tensor>& user_inputs) {
  Impl& im = *impl_;
  if (user_inputs.size() != im.user_inputs.size())
    throw InputError(fmt::format("the exported forward takes {} tensor inputs, got {}", im.user_inputs.size(),
                                 user_inputs.size()));
  for (size_t i = 0; i < user_inputs.size(); ++i) {
    const auto& spec = im.user_inputs[i];
    const at::Tensor& x = user_inputs[i];
    if (spec.sizes.empty()) continue;
    if (x.dim() != static_cast<int64_t>(spec.sizes.size()))
      throw InputError(fmt::format("input '{}' has {} dimensions; it was exported with {}", spec.name, x.dim(),
                                   spec.sizes.size()));
    for (size_t d = 0; d < spec.sizes.size(); ++d) {
      const int64_t n = x.size(static_cast<int64_t>(d));
      if (spec.sizes[d] && n != *spec.sizes[d])
        throw InputError(fmt::format("input '{}' dimension {} is {}; the file was exported with it fixed at {}",
                                     spec.name, d, n, *spec.sizes[d]));
      const auto [lo, hi] = spec.ranges[d];
      if (!spec.sizes[d] && (n < lo || (hi >= 0 && n > hi)))
        throw InputError(fmt::format("input '{}' dimension {} is {}, outside the range [{}, {}] it was exported for",
                                     spec.name, d, n, lo, hi < 0 ? std::string("inf") : std::to_string(hi)));
    }
  }
  std::vector<c10::IValue> env(im.nslots);
  for (const auto& src : im.sources) {
    switch (src.k) {
      case InputSource::K::kUser: env[src.slot] = user_inputs[src.index]; break;
      case InputSource::K::kParameter: env[src.slot] = im.parameters[src.index].second; break;
      case InputSource::K::kBuffer: env[src.slot] = im.buffers[src.index].second; break;
      case InputSource::K::kConstant: env[src.slot] = im.constants[src.index].second; break;
      case InputSource::K::kValue: env[src.slot] = src.value; break;
    }
  }
  im.execute(env);
  std::vector<c10::IValue> outs;
  for (const auto& sink : im.sinks) {
    c10::IValue v = im.value(sink.value, env);
    if (sink.k == OutputSink::K::kUser) {
      outs.push_back(std::move(v));
    } else {
      at::NoGradGuard no_grad;
      at::Tensor& b = im.buffers[sink.buffer].second;
      const at::Tensor nv = v.toTensor().detach();
      if (nv.sizes() == b.sizes()) b.copy_(nv);
      else b = nv.clone();
    }
  }
  size_t next = 0;
  return build(im.out_spec, outs, next);
}

std::string ExportedProgram::first_random_node() const {
  static const std::set<std::string> kRandom{"rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
                                             "bernoulli", "normal", "multinomial", "uniform", "exponential",
                                             "poisson", "randperm", "rrelu", "rrelu_with_noise", "cauchy",
                                             "log_normal", "geometric", "random", "native_dropout", "dropout",
                                             "feature_dropout", "alpha_dropout", "feature_alpha_dropout"};
  std::vector<const Step*> all;
  impl_->for_each_graph([&](const Impl& g) {
    for (const auto& s : g.steps) all.push_back(&s);
  });
  for (const Step* sp : all) {
    const Step& s = *sp;
    if (s.k != Step::K::kOp) continue;
    const auto& schema = s.op->schema();
    std::string base = schema.name().substr(schema.name().find("::") + 2);
    if (!base.empty() && base.back() == '_') base.pop_back();
    const auto& sargs = schema.arguments();
    auto constant = [&](const std::string& n) -> const c10::IValue* {
      for (size_t i = 0; i < sargs.size(); ++i)
        if (sargs[i].name() == n && s.args[i].k == Arg::K::kConst) return &s.args[i].value;
      return nullptr;
    };
    auto has = [&](const std::string& n) {
      for (const auto& a : sargs)
        if (a.name() == n) return true;
      return false;
    };
    // A train flag that is the constant false, or a dropout probability that is the constant 0,
    // switches the randomness off.
    const c10::IValue* train = constant("train");
    if (train && train->isBool() && !train->toBool()) continue;
    if (has("train") && !train) return s.target;
    if (kRandom.count(base)) {
      const c10::IValue* p = constant("p");
      if (p && p->isDouble() && p->toDouble() == 0.0) continue;
      return s.target;
    }
    for (const char* pname : {"dropout_p", "dropout"}) {
      const c10::IValue* p = constant(pname);
      if (has(pname) && !(p && p->isDouble() && p->toDouble() == 0.0)) return s.target;
    }
    for (const auto& a : sargs)
      if (a.type()->kind() == c10::TypeKind::OptionalType &&
          a.type()->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::GeneratorType)
        if (kRandom.count(base)) return s.target;
  }
  return "";
}

}  // namespace grassaudit
