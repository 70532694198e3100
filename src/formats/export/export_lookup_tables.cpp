#include <algorithm>
#include <map>
#include <set>

#include "formats/export/export_graph.h"

// Which table an integer user input indexes: nn.Embedding exports as aten.embedding(weight, ids)
// and a gather of rows as aten.index_select(table, 0, ids), the table a parameter, buffer or
// constant of the program; ids may first pass a dtype conversion (aten._to_copy, aten.to). The
// table's first dimension is the vocabulary the ids may be drawn from.
namespace grassaudit {

using namespace exported;

std::optional<int64_t> ExportedProgram::lookup_table_rows(size_t input) const {
  const Impl& im = *impl_;
  std::set<int> ids;                 // the input's slot and the slots that carry it unchanged
  std::map<int, int64_t> table_rows;  // a slot holding a tensor of the program: its first dimension
  for (const auto& src : im.sources) {
    if (src.k == InputSource::K::kUser && src.index == input) ids.insert(src.slot);
    const at::Tensor* t = src.k == InputSource::K::kParameter ? &im.parameters[src.index].second
                          : src.k == InputSource::K::kBuffer  ? &im.buffers[src.index].second
                          : src.k == InputSource::K::kConstant ? &im.constants[src.index].second
                                                               : nullptr;
    if (t && t->defined() && t->dim() >= 1) table_rows[src.slot] = t->size(0);
  }
  if (ids.empty()) return std::nullopt;
  auto slot_in = [](const Arg& a, const std::set<int>& s) { return a.k == Arg::K::kSlot && s.count(a.slot) > 0; };
  auto table = [&](const Arg& a) -> std::optional<int64_t> {
    if (a.k != Arg::K::kSlot) return std::nullopt;
    auto it = table_rows.find(a.slot);
    return it == table_rows.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  std::optional<int64_t> found;
  auto keep = [&](std::optional<int64_t> rows) {
    if (rows) found = found ? std::min(*found, *rows) : *rows;
  };
  // The root graph's steps in order: each carrier comes before its readers.
  for (const Step& s : im.steps) {
    if (s.k != Step::K::kOp || !s.op || s.args.empty()) continue;
    const std::string& name = s.op->schema().name();
    if ((name == "aten::_to_copy" || name == "aten::to" || name == "aten::alias" || name == "aten::clone") &&
        slot_in(s.args[0], ids) && !s.outs.empty() && s.outs[0].slot >= 0)
      ids.insert(s.outs[0].slot);
    if (name == "aten::embedding" && s.args.size() >= 2 && slot_in(s.args[1], ids)) keep(table(s.args[0]));
    if (name == "aten::index_select" && s.args.size() >= 3 && slot_in(s.args[2], ids) &&
        s.args[1].k == Arg::K::kConst && s.args[1].value.isInt() && s.args[1].value.toInt() == 0)
      keep(table(s.args[0]));
  }
  return found;
}

}  // namespace grassaudit
