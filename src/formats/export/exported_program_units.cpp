#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "formats/export/export_graph.h"
#include "util/error.h"

// Where a leak enters in an ExportedProgram: a group per module of the nodes' nn_module_stack
// (its path, its class), one unit per op node under the module it runs in (its op, its name),
// each named by the innermost frame of model code of its stack trace ("Sdpa.forward,
// model.py:99", the class the module whose forward that frame is). Higher-order ops (cond, scan,
// ...) are one unit each: their sub-graphs are not looked into.
namespace grassaudit {
using namespace exported;  // as the folder's other files: a unity batch joins them

using exported::Arg;
using exported::Step;

namespace {

// "torch.ops.aten.scaled_dot_product_attention.default" -> "aten.scaled_dot_product_attention".
std::string short_op(const std::string& target) {
  std::string t = target;
  if (t.rfind("torch.ops.", 0) == 0) t = t.substr(std::strlen("torch.ops."));
  const std::string dflt = ".default";
  if (t.size() > dflt.size() && t.compare(t.size() - dflt.size(), dflt.size(), dflt) == 0)
    t.resize(t.size() - dflt.size());
  return t;
}

// "__main__.Sdpa" -> "Sdpa".
std::string short_class(const std::string& qualified) {
  const size_t dot = qualified.rfind('.');
  return dot == std::string::npos ? qualified : qualified.substr(dot + 1);
}

// Whether a module's class is torch's own (its forward's frames are not in the stack traces).
bool torch_class(const std::string& qualified) { return qualified.rfind("torch.", 0) == 0; }

std::vector<int> slots_read(const Arg& a) {
  std::vector<int> out;
  if (a.k == Arg::K::kSlot) out.push_back(a.slot);
  for (int s : a.slots)
    if (s >= 0) out.push_back(s);
  return out;
}

}  // namespace

const GraphUnits& ExportedProgram::Impl::unit_plan() {
  if (units_built) return units;
  units_built = true;
  std::vector<UnitStep> us;
  std::optional<std::string> root_op, root_source;
  // The modules a higher-order op runs in where its own metadata stops short: those the nodes
  // of its sub-graphs share (the longest common prefix of their stacks, nested ops' included)
  // when they lie inside its own, as a torch.no_grad() block in Mixer.forward exports to a
  // wrap_with_set_grad_enabled node of the root whose body nodes run in mixer.
  using ModuleStack = std::vector<std::pair<std::string, std::string>>;
  std::function<std::optional<ModuleStack>(const Impl&, const Step&)> shared_modules = [&](const Impl& g,
                                                                                           const Step& s) {
    std::optional<ModuleStack> common;
    for (size_t sub : s.subgraphs)
      for (const Step& t : g.subgraphs[sub].graph->steps) {
        if (!t.modules.empty())
          keep_common_prefix(common, t.modules);
        else if (t.k == Step::K::kHigherOrder)
          if (auto inner = shared_modules(*g.subgraphs[sub].graph, t)) keep_common_prefix(common, *inner);
      }
    return common;
  };
  for (const Step& step : steps) {
    Step inferred;
    if (step.k == Step::K::kHigherOrder)
      if (auto m = shared_modules(*this, step);
          m && m->size() > step.modules.size() && std::equal(step.modules.begin(), step.modules.end(), m->begin())) {
        inferred = step;
        inferred.modules = *m;
      }
    const Step& s = inferred.modules.empty() ? step : inferred;
    UnitStep u;
    // The module whose own code the node's frame is: the innermost one that is not torch's.
    int owner = -1;
    for (int i = static_cast<int>(s.modules.size()) - 1; i >= 0 && owner < 0; --i)
      if (!torch_class(s.modules[static_cast<size_t>(i)].second)) owner = i;
    std::optional<std::string> source;
    if (s.frame && owner >= 0) {
      const std::string cls = short_class(s.modules[static_cast<size_t>(owner)].second);
      const std::string fn = s.frame->function == "forward" ? cls + ".forward" : s.frame->function;
      source = fmt::format("{}, {}:{}", fn, s.frame->file, s.frame->line);
    }
    for (size_t i = 0; i < s.modules.size(); ++i) {
      const auto& [path, cls] = s.modules[i];
      const bool own = static_cast<int>(i) == owner;
      if (path.empty()) {
        if (!root_op) root_op = short_class(cls);
        if (own && !root_source) root_source = source;
        continue;
      }
      u.scopes.push_back(UnitStep::Scope{path, short_class(cls), own ? source : std::nullopt});
    }
    u.is_unit = (s.k == Step::K::kOp || s.k == Step::K::kHigherOrder) && !s.outs.empty();
    if (u.is_unit) {
      u.op = short_op(s.target);
      u.source = source;
      if (!s.name.empty()) u.node = s.name;
    }
    for (const auto& a : s.args)
      for (int slot : slots_read(a)) u.reads.push_back(slot);
    for (const auto& o : s.outs) {
      if (o.slot >= 0) u.defines.push_back(o.slot);
      for (int slot : o.slots)
        if (slot >= 0) u.defines.push_back(slot);
    }
    us.push_back(std::move(u));
  }
  std::vector<int> returned;
  for (const auto& sink : sinks)
    for (int slot : slots_read(sink.value)) returned.push_back(slot);
  units = GraphUnits(us, nslots, returned, root_op, root_source);
  return units;
}

const std::vector<ProbeUnit>& ExportedProgram::units() { return impl_->unit_plan().units(); }

c10::IValue ExportedProgram::run_units(const std::vector<at::Tensor>& user_inputs, const UnitTensors& fed,
                                       const UnitTensors& held, std::vector<UnitValues>& values) {
  UnitRecorder recorder(impl_->unit_plan(), fed, held, values);
  return run_with(user_inputs, &recorder);
}

}  // namespace grassaudit
