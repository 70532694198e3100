#include "formats/torchscript/torchscript_units.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "util/error.h"

namespace grassaudit {

namespace {

using torch::jit::Graph;
using torch::jit::Node;
using torch::jit::Value;

// One forward's taps: what the units read and give, first call each.
struct TapRun {
  const UnitTensors* fed = nullptr;
  const UnitTensors* held = nullptr;
  std::vector<UnitValues>* values = nullptr;
  std::set<std::array<int64_t, 3>> seen;            // (unit, side, argument) tapped once already
  std::map<std::pair<int64_t, int>, size_t> taken;  // (unit, side) -> leaves recorded so far
};

thread_local TapRun* tap_run = nullptr;

void tap_leaves(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    out.push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) tap_leaves(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) tap_leaves(e, out);
  }
}

// v with its tensor leaves, in tap_leaves' order, taken from `with` starting at `*next`.
c10::IValue tap_rebuilt(const c10::IValue& v, const std::vector<at::Tensor>& with, size_t* next) {
  if (v.isTensor()) return with[(*next)++];
  if (v.isTuple()) {
    std::vector<c10::IValue> elems;
    for (const auto& e : v.toTupleRef().elements()) elems.push_back(tap_rebuilt(e, with, next));
    return c10::ivalue::Tuple::create(std::move(elems));
  }
  if (v.isList()) {
    c10::impl::GenericList list(v.toList().elementType());
    for (const auto& e : v.toListRef()) list.push_back(tap_rebuilt(e, with, next));
    return c10::IValue(list);
  }
  return v;
}

// What the tap of (unit, side, argument) passes on: the value as it is, or, at the unit's first
// call, with its leaves recorded and the fed (side 0) or held (side 1) ones put in their place.
c10::IValue tapped(c10::IValue v, int64_t unit, int64_t side, int64_t arg) {
  TapRun* r = tap_run;
  if (!r || unit <= 0 || unit >= static_cast<int64_t>(r->values->size())) return v;
  if (!r->seen.insert({unit, side, arg}).second) return v;
  UnitValues& uv = (*r->values)[static_cast<size_t>(unit)];
  uv.called = true;
  std::vector<at::Tensor> leaves;
  tap_leaves(v, leaves);
  if (leaves.empty()) return v;
  size_t& at = r->taken[{unit, static_cast<int>(side)}];
  const UnitTensors& given = side == 0 ? *r->fed : *r->held;
  auto it = given.find(static_cast<int>(unit));
  if (it != given.end()) {
    if (at + leaves.size() > it->second.size())
      throw InputError(fmt::format("unit {} is given {} {} leaves and has more", unit, it->second.size(),
                                   side == 0 ? "input" : "output"));
    // Copies: the model may write into what it is given (x += ...), and the caller's tensors stay as they are.
    for (size_t k = 0; k < leaves.size(); ++k) leaves[k] = it->second[at + k].clone();
    size_t next = 0;
    v = tap_rebuilt(v, leaves, &next);
  }
  at += leaves.size();
  // Recorded as copies: a unit that writes into its inputs, or a caller into its outputs
  // (h += self.mixer(h)), changes the tensors after this point, not what the unit saw or gave.
  auto& record = side == 0 ? uv.inputs : uv.outputs;
  for (const auto& t : leaves) record.push_back(t.clone());
  return v;
}

// grassaudit::tap(Any x, int unit, int side, int arg) -> Any: x itself where no forward is being
// recorded. Conservative alias analysis: no pass moves, merges or drops it.
const torch::jit::RegisterOperators tap_operator({torch::jit::Operator(
    "grassaudit::tap(Any x, int unit, int side, int arg) -> Any",
    [](torch::jit::Stack& stack) {
      const int64_t arg = torch::jit::pop(stack).toInt();
      const int64_t side = torch::jit::pop(stack).toInt();
      const int64_t unit = torch::jit::pop(stack).toInt();
      c10::IValue v = torch::jit::pop(stack);
      torch::jit::push(stack, tapped(std::move(v), unit, side, arg));
    },
    c10::AliasAnalysisKind::CONSERVATIVE)});

bool holds_tensors(const c10::TypePtr& t) {
  if (t->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& c : t->containedTypes())
    if (holds_tensors(c)) return true;
  return false;
}

// "__torch__.model.Mixer" -> "Mixer".
std::string last_name(const c10::ClassTypePtr& cls) {
  if (!cls || !cls->name()) return "";
  return cls->name()->name();
}

// "file.py:LINE" of the method `g` was compiled from: the first line of its source (its def, or
// its first decorator), read from the first node that knows where it was written (the Python
// source the file was compiled from where it records it), as Python's inspect.getsourcelines
// gives it for a live module.
std::optional<std::string> first_line(const Graph& g) {
  for (const Node* n : g.nodes()) {
    torch::jit::SourceRange r = n->sourceRange();
    if (auto from = r.findSourceRangeThatGenerated()) r = *from;
    if (auto flc = r.file_line_col()) {
      std::string file = std::get<0>(*flc);
      const size_t slash = file.find_last_of('/');
      if (slash != std::string::npos) file = file.substr(slash + 1);
      if (file.empty()) continue;
      return fmt::format("{}:{}", file, r.source() ? r.source()->starting_line_no() : std::get<1>(*flc));
    }
  }
  return std::nullopt;
}

std::optional<std::string> source_of(const std::string& cls, const std::string& method, const Graph& g) {
  const auto line = first_line(g);
  if (!line) return std::nullopt;
  return fmt::format("{}.{}, {}", cls.empty() ? std::string("<module>") : cls, method, *line);
}

// The attribute path of a module value: the GetAttr chain back to the graph's self.
std::optional<std::string> module_path(Value* v, const Value* self) {
  std::vector<std::string> parts;
  while (v != self) {
    const Node* n = v->node();
    if (n->kind() != c10::prim::GetAttr) return std::nullopt;
    parts.push_back(n->s(c10::attr::name));
    v = n->input(0);
  }
  std::reverse(parts.begin(), parts.end());
  return fmt::format("{}", fmt::join(parts, "."));
}

// The first call of a module's method in graph order, sub-blocks included.
Node* first_module_call(torch::jit::Block* b) {
  for (Node* n : b->nodes()) {
    if (n->kind() == c10::prim::CallMethod) {
      auto cls = n->input(0)->type()->cast<c10::ClassType>();
      if (cls && cls->is_module()) return n;
    }
    for (torch::jit::Block* sub : n->blocks())
      if (Node* c = first_module_call(sub)) return c;
  }
  return nullptr;
}

Node* make_tap(Graph& g, Value* v, int unit, int side, int arg) {
  Value* u = g.insertConstant(static_cast<int64_t>(unit));
  Value* s = g.insertConstant(static_cast<int64_t>(side));
  Value* a = g.insertConstant(static_cast<int64_t>(arg));
  Node* tap = g.create(c10::Symbol::fromQualString("grassaudit::tap"), {v, u, s, a}, 1);
  tap->output()->setType(v->type());
  return tap;
}

}  // namespace

struct TorchScriptUnits::Impl {
  std::vector<ProbeUnit> units;
  std::shared_ptr<Graph> graph;
  std::unique_ptr<torch::jit::GraphFunction> fn;
  c10::intrusive_ptr<c10::ivalue::Object> owner;
};

TorchScriptUnits::TorchScriptUnits(torch::jit::Module& module) : impl_(std::make_unique<Impl>()) {
  impl_->owner = module._ivalue();
  auto& forward = torch::jit::toGraphFunction(module.get_method("forward").function());
  auto g = forward.graph()->copy();
  const Value* self = g->inputs().at(0);
  const std::string root_class = last_name(module.type());
  impl_->units.push_back(ProbeUnit{"", root_class, source_of(root_class, "forward", *forward.graph()), std::nullopt, -1});
  std::map<std::string, int> by_path{{"", 0}};
  // Each call inlined outermost first: the calls inside its code appear in the graph after it,
  // their self a GetAttr of its own, so every path is read whole.
  while (Node* call = first_module_call(g->block())) {
    auto cls = call->input(0)->type()->expect<c10::ClassType>();
    const std::string method = call->s(c10::attr::name);
    auto& callee = torch::jit::toGraphFunction(cls->getMethod(method));
    // A module's forward, or one of its overloads (nn.RNN's scripted forward is forward__0).
    const bool forward_call = method == "forward" || method.rfind("forward__", 0) == 0;
    const auto path = forward_call ? module_path(call->input(0), self) : std::nullopt;
    if (path && !path->empty()) {
      int unit;
      auto found = by_path.find(*path);
      if (found != by_path.end()) {
        unit = found->second;
      } else {
        // The enclosing unit: the longest path of a unit that this one lies under.
        int parent = 0;
        size_t longest = 0;
        for (const auto& [p, i] : by_path)
          if (!p.empty() && p.size() > longest && path->size() > p.size() && path->compare(0, p.size(), p) == 0 &&
              (*path)[p.size()] == '.') {
            parent = i;
            longest = p.size();
          }
        unit = static_cast<int>(impl_->units.size());
        const std::string c = last_name(cls);
        impl_->units.push_back(ProbeUnit{*path, c, source_of(c, "forward", *callee.graph()), std::nullopt, parent});
        by_path.emplace(*path, unit);
      }
      torch::jit::WithInsertPoint guard(call);
      for (size_t i = 1; i < call->inputs().size(); ++i) {
        Value* in = call->input(i);
        if (!holds_tensors(in->type())) continue;
        Node* tap = make_tap(*g, in, unit, 0, static_cast<int>(i));
        tap->insertBefore(call);
        call->replaceInput(i, tap->output());
      }
      Node* after = call;
      for (size_t i = 0; i < call->outputs().size(); ++i) {
        Value* out = call->output(i);
        if (!holds_tensors(out->type())) continue;
        Node* tap = make_tap(*g, out, unit, 1, static_cast<int>(i));
        tap->insertAfter(after);
        after = tap;
        out->replaceAllUsesWith(tap->output());
        tap->replaceInput(0, out);
      }
    }
    torch::jit::inlineCallTo(call, &callee, callee.graph().get());
  }
  impl_->graph = g;
  impl_->fn = std::make_unique<torch::jit::GraphFunction>(c10::QualifiedName("grassaudit_localise"), g, nullptr);
}

TorchScriptUnits::~TorchScriptUnits() = default;

const std::vector<ProbeUnit>& TorchScriptUnits::units() const { return impl_->units; }

bool TorchScriptUnits::made_from(const torch::jit::Module& module) const {
  return impl_->owner.get() == module._ivalue().get();
}

c10::IValue TorchScriptUnits::run(std::vector<c10::IValue> stack, const UnitTensors& fed, const UnitTensors& held,
                                  std::vector<UnitValues>& values) {
  TapRun r;
  r.fed = &fed;
  r.held = &held;
  r.values = &values;
  struct Scope {
    TapRun* before;
    explicit Scope(TapRun* now) : before(tap_run) { tap_run = now; }
    ~Scope() { tap_run = before; }
  } scope(&r);
  impl_->fn->run(stack);
  for (const auto* given : {&fed, &held})
    for (const auto& [u, ts] : *given) {
      if (u <= 0 || u >= static_cast<int>(values.size())) continue;
      const auto& have = given == &fed ? values[static_cast<size_t>(u)].inputs : values[static_cast<size_t>(u)].outputs;
      if (values[static_cast<size_t>(u)].called && have.size() != ts.size())
        throw InputError(fmt::format("unit {} is given {} {} leaves and has {}", u, ts.size(),
                                     given == &fed ? "input" : "output", have.size()));
    }
  return stack.back();
}

}  // namespace grassaudit
