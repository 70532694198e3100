#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>

#include "formats/onnx/onnx_program.h"

// Which table an integer input indexes: the embedding lookup every exporter writes for
// nn.Embedding / tf.gather / jnp.take is a Gather whose data is an initializer and whose indices
// are the ids, sometimes after a Cast (int32 ids) or an Identity. The table's first dimension is
// the vocabulary the ids may be drawn from.
namespace grassaudit::onnx_rt {

namespace {

// The Gather's axis (0 when the attribute is absent).
int64_t gather_axis(const onnx::NodeProto& n) {
  for (const auto& a : n.attribute())
    if (a.name() == "axis") return a.i();
  return 0;
}

}  // namespace

std::optional<int64_t> OnnxProgram::lookup_table_rows(size_t input) const {
  if (input >= inputs().size()) return std::nullopt;
  const onnx::GraphProto& g = model_proto().graph();
  std::map<std::string, int64_t> rows;  // an initializer of rank >= 1: its first dimension
  for (const auto& init : g.initializer())
    if (init.dims_size() >= 1) rows[init.name()] = init.dims(0);
  std::set<std::string> ids{inputs()[input].name};  // the input, and what carries it unchanged
  std::optional<int64_t> found;
  // Nodes are in topological order (the ONNX spec requires it; the reader checks every name is
  // defined before it is read), so one pass sees each carrier before its readers.
  for (const auto& n : g.node()) {
    if (n.input_size() < 1 || n.output_size() < 1) continue;
    const std::string& op = n.op_type();
    if ((op == "Cast" || op == "Identity") && ids.count(n.input(0))) ids.insert(n.output(0));
    if (op == "Gather" && n.input_size() == 2 && ids.count(n.input(1)) && gather_axis(n) == 0) {
      auto table = rows.find(n.input(0));
      if (table != rows.end()) found = found ? std::min(*found, table->second) : table->second;
    }
  }
  return found;
}

}  // namespace grassaudit::onnx_rt
