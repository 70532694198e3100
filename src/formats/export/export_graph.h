#pragma once
// Internal to formats/export: an ExportedProgram as it is read, the steps of its graph and where
// each value goes, shared by the files that read it (export_serde, export_graph_reader,
// export_program_reader, export_archive) and run it (export_interpreter, export_higher_order).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/export/exported_program.h"
#include "formats/graph/graph_units.h"
#include "util/error.h"

namespace grassaudit {
namespace exported {

using nlohmann::json;

// "LibTorch 1.13.0": whose op schemas the graph is matched against, for messages.
extern const std::string kLibTorch;

// The serde schema's values (export_serde.cpp).
// Python's json writes the non-finite floats as bare NaN, Infinity and -Infinity, which JSON does
// not have: outside string literals they are quoted before parsing (float_of reads them back).
std::string quote_nonfinite(const std::string& text);
double float_of(const json& v);
at::ScalarType scalar_type(int64_t serde);
int64_t serde_layout(int64_t serde);
int64_t memory_format(int64_t serde);
// A union of the serde schema: an object with one key -> (key, value).
std::pair<std::string, const json*> kind_of(const json& u, const char* what);
// j[key], or an InputError naming `where` and the missing key.
const json& field(const json& j, const char* key, const std::string& where);
bool is_identifier(const std::string& s);

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
  // Where the node comes from (its metadata): the modules it runs in, outermost first (path,
  // qualified class), and the innermost frame of model code of its stack trace.
  std::vector<std::pair<std::string, std::string>> modules;
  std::optional<SourceFrame> frame;
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

// The output structure (out_spec, a pytree spec of protocol 1): its tree, its leaf count, and
// the user outputs put back into it (export_serde.cpp, export_interpreter.cpp).
Spec parse_spec(const json& j);
size_t count_leaves(const Spec& s);
c10::IValue build(const Spec& s, const std::vector<c10::IValue>& leaves, size_t& next);

}  // namespace exported

struct ExportedProgram::Impl {
  std::string producer = "an unknown PyTorch", layout;
  int64_t schema_major = 0, schema_minor = 0;
  std::vector<ExportedInput> user_inputs;
  std::vector<std::pair<std::string, at::Tensor>> parameters, buffers, constants;
  std::vector<exported::InputSource> sources;
  std::vector<exported::Step> steps;
  std::vector<exported::OutputSink> sinks;
  exported::Spec out_spec;
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
    std::vector<exported::Arg> outputs;  // what it returns, in order
  };
  std::vector<SubGraph> subgraphs;
  Impl* root = this;  // the program's graph: where the census goes

  exported::Arg argument(const nlohmann::json& u, const c10::TypePtr& type, const std::string& where);
  exported::Arg plain_argument(const nlohmann::json& u, const std::string& where);
  void parse_program(const nlohmann::json& ep, const std::map<std::string, at::Tensor>& state,
                     const std::map<std::string, at::Tensor>& consts);
  void parse_inputs(const nlohmann::json& graph, const nlohmann::json& signature,
                    const std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                    const std::map<std::string, at::Tensor>& state, const std::map<std::string, at::Tensor>& consts);
  void parse_outputs(const nlohmann::json& graph, const nlohmann::json& signature);
  void parse_out_spec(const nlohmann::json& graph_module);
  void parse_node(const nlohmann::json& node, size_t index);
  void parse_higher_order(const nlohmann::json& inputs, const nlohmann::json& outputs, exported::Step& s, const std::string& where);
  exported::Out output_of(const nlohmann::json& output, const std::string& where);
  size_t parse_subgraph(const nlohmann::json& graph_argument, const std::string& where);
  void release_after_last_read(const std::vector<const exported::Arg*>& final_reads);
  c10::IValue value(const exported::Arg& a, std::vector<c10::IValue>& env) const;
  void execute(std::vector<c10::IValue>& env, UnitRecorder* recorder = nullptr) const;
  void run_step(const exported::Step& s, std::vector<c10::IValue>& env, std::vector<c10::IValue>& stack) const;
  // The program's units (exported_program_units.cpp), built on first use.
  GraphUnits units;
  bool units_built = false;
  const GraphUnits& unit_plan();
  std::vector<c10::IValue> call(size_t subgraph, const std::vector<c10::IValue>& inputs) const;
  std::vector<c10::IValue> higher_order(const exported::Step& s, const std::vector<c10::IValue>& args,
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

}  // namespace grassaudit
