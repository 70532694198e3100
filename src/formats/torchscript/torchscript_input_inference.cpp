#include "formats/torchscript/torchscript_input_inference.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

namespace grassaudit {

namespace {

using torch::jit::Node;
using torch::jit::Value;

// How deep a chain of pass-through ops (transpose, pad, cast) is followed to the op that decides.
constexpr int kMaxChain = 8;

// Reads that look only at a tensor's metadata (x.size(1), x.dim(), x is None): they say nothing
// about what the tensor holds, so the first op that reads the values is the one after them.
bool metadata_only(const Node* n) {
  static const std::set<std::string> kinds{"aten::size",   "aten::dim",        "prim::device",  "prim::dtype",
                                           "aten::len",    "prim::layout",     "aten::__is__",  "aten::__isnot__",
                                           "aten::numel",  "prim::requires_grad", "prim::is_cuda", "prim::shape"};
  return kinds.count(n->kind().toQualString()) > 0;
}

// forward's graph, every call inlined, read for what its arguments are.
class Reader {
 public:
  Reader(const torch::jit::Module& module, std::shared_ptr<torch::jit::Graph> graph)
      : module_(module), graph_(std::move(graph)) {
    self_ = graph_->inputs()[0];
    number(graph_->block());
  }

  const Value* argument(size_t i) const { return graph_->inputs()[i]; }

  // The rows of the tables `ids` indexes (the smallest, when several), through dtype casts.
  std::optional<int64_t> table_rows(const Value* ids, int depth = 0) const {
    if (depth > kMaxChain) return std::nullopt;
    std::optional<int64_t> found;
    auto keep = [&](std::optional<int64_t> rows) {
      if (rows) found = found ? std::min(*found, *rows) : *rows;
    };
    for (const auto& use : ids->uses()) {
      const Node* n = use.user;
      const std::string kind = n->kind().toQualString();
      if (kind == "aten::embedding" && use.offset == 1) keep(rows_of(n->input(0)));
      if (kind == "aten::index_select" && use.offset == 2 && constant_int(n->input(1)) == std::optional<int64_t>(0))
        keep(rows_of(n->input(0)));
      if ((kind == "aten::to" || kind == "aten::long" || kind == "aten::int" || kind == "aten::contiguous" ||
           kind == "prim::unchecked_cast") &&
          use.offset == 0 && n->outputs().size() == 1)
        keep(table_rows(n->output(0), depth + 1));
    }
    return found;
  }

  // C of a features input, from the first op that reads its values, when that op fixes it:
  // [B, T, C] (channels_first false) or [B, C, T].
  std::optional<int64_t> features(const Value* x, bool channels_first, int depth = 0) const {
    if (depth > kMaxChain) return std::nullopt;
    const Node* n = first_reader(x);
    if (!n || n->inputs().empty() || n->input(0) != x) return std::nullopt;
    const std::string kind = n->kind().toQualString();
    auto next = [&](bool layout) { return features(n->output(0), layout, depth + 1); };
    if (kind == "prim::unchecked_cast" || kind == "aten::contiguous") return next(channels_first);
    if (kind == "aten::transpose" && n->inputs().size() == 3 && swaps_last_two(n->input(1), n->input(2)))
      return next(!channels_first);
    if (kind == "aten::permute" && n->inputs().size() == 2) {
      const auto dims = constant_ints(n->input(1));
      if (dims && *dims == std::vector<int64_t>{0, 2, 1}) return next(!channels_first);
      return std::nullopt;
    }
    if (!channels_first) {
      if (kind == "aten::linear" && n->inputs().size() >= 2) {
        const auto w = held(n->input(1));
        if (w && w->dim() == 2) return w->size(1);
      }
      if (kind == "aten::matmul" && n->inputs().size() == 2) {
        const auto w = held(n->input(1));
        if (w && w->dim() == 2) return w->size(0);
      }
      if (kind == "aten::layer_norm" && n->inputs().size() >= 2) {
        const auto shape = constant_ints(n->input(1));
        if (shape && shape->size() == 1) return (*shape)[0];
      }
      return std::nullopt;
    }
    // [B, C, T]: a convolution over time reads C channels (its weight [out, C / groups, k]).
    if ((kind == "aten::constant_pad_nd" || kind == "aten::pad") && n->inputs().size() >= 2) {
      const auto pads = constant_ints(n->input(1));
      if (pads && pads->size() == 2) return next(channels_first);  // time only
      return std::nullopt;
    }
    std::optional<int64_t> groups;
    if (kind == "aten::conv1d" && n->inputs().size() >= 7) groups = constant_int(n->input(6));
    if (kind == "aten::_convolution" && n->inputs().size() >= 9) {
      const auto transposed = torch::jit::toIValue(n->input(6));
      if (transposed && transposed->isBool() && !transposed->toBool()) groups = constant_int(n->input(8));
    }
    if (groups && *groups >= 1) {
      const auto w = held(n->input(1));
      if (w && w->dim() == 3) return w->size(1) * *groups;
    }
    return std::nullopt;
  }

 private:
  void number(const torch::jit::Block* b) {
    for (const Node* n : b->nodes()) {
      const size_t at = order_.size();
      order_[n] = at;
      for (const torch::jit::Block* sub : n->blocks()) number(sub);
    }
  }

  // The first node in graph order that reads x's values (nested blocks included).
  const Node* first_reader(const Value* x) const {
    const Node* best = nullptr;
    size_t best_at = std::numeric_limits<size_t>::max();
    for (const auto& use : x->uses()) {
      if (metadata_only(use.user)) continue;
      auto it = order_.find(use.user);
      const size_t at = it == order_.end() ? std::numeric_limits<size_t>::max() - 1 : it->second;  // the return
      if (!best || at < best_at) best = use.user, best_at = at;
    }
    return best;
  }

  // The tensor v holds when it is a constant or an attribute of the module (a parameter or buffer
  // reached from self by prim::GetAttr); nullopt for anything computed.
  std::optional<at::Tensor> held(const Value* v) const {
    if (auto c = torch::jit::toIValue(v); c && c->isTensor()) return c->toTensor();
    std::vector<std::string> path;
    while (v->node()->kind() == c10::prim::GetAttr) {
      path.push_back(v->node()->s(c10::attr::name));
      v = v->node()->input(0);
    }
    if (v != self_ || path.empty()) return std::nullopt;
    c10::IValue obj(module_._ivalue());
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (!obj.isObject()) return std::nullopt;
      const auto o = obj.toObject();
      if (!o->type()->hasAttribute(*it)) return std::nullopt;
      obj = o->getAttr(*it);
    }
    if (!obj.isTensor()) return std::nullopt;
    return obj.toTensor();
  }

  std::optional<int64_t> rows_of(const Value* table) const {
    const auto t = held(table);
    if (!t || t->dim() < 1 || t->size(0) < 1) return std::nullopt;
    return t->size(0);
  }

  static std::optional<int64_t> constant_int(const Value* v) {
    const auto c = torch::jit::toIValue(v);
    if (c && c->isInt()) return c->toInt();
    return std::nullopt;
  }
  // A constant int list, or a list or tuple built of constant ints ([1, 0] in scripted code).
  static std::optional<std::vector<int64_t>> constant_ints(const Value* v) {
    const auto c = torch::jit::toIValue(v);
    if (c && c->isIntList()) return c->toIntVector();
    if (c && c->isTuple()) {
      std::vector<int64_t> out;
      for (const auto& e : c->toTupleRef().elements()) {
        if (!e.isInt()) return std::nullopt;
        out.push_back(e.toInt());
      }
      return out;
    }
    const Node* n = v->node();
    if (n->kind() != c10::prim::ListConstruct && n->kind() != c10::prim::TupleConstruct) return std::nullopt;
    std::vector<int64_t> out;
    for (const Value* e : n->inputs()) {
      const auto i = constant_int(e);
      if (!i) return std::nullopt;
      out.push_back(*i);
    }
    return out;
  }
  // transpose(1, 2) of a rank-3 tensor, in any spelling: (2, 1), (-2, -1), (1, -1), ...
  static bool swaps_last_two(const Value* a, const Value* b) {
    auto d0 = constant_int(a), d1 = constant_int(b);
    if (!d0 || !d1) return false;
    auto norm = [](int64_t d) { return d < 0 ? d + 3 : d; };
    return std::set<int64_t>{norm(*d0), norm(*d1)} == std::set<int64_t>{1, 2};
  }

  const torch::jit::Module& module_;
  std::shared_ptr<torch::jit::Graph> graph_;
  const Value* self_ = nullptr;
  std::unordered_map<const Node*, size_t> order_;
};

bool is_tensor_type(const c10::TypePtr& t) {
  if (t->kind() == c10::TypeKind::TensorType) return true;
  if (t->kind() == c10::TypeKind::OptionalType)
    return t->castRaw<c10::OptionalType>()->getElementType()->kind() == c10::TypeKind::TensorType;
  return false;
}

}  // namespace

std::vector<InputFinding> find_torchscript_inputs(const torch::jit::Module& module, int64_t time_axis) {
  std::vector<InputFinding> out;
  auto method = module.find_method("forward");
  if (!method) return out;
  const auto& args = method->function().getSchema().arguments();
  std::optional<Reader> reader;
  try {
    auto graph = method->graph()->copy();  // the module's own graph stays as it is
    torch::jit::Inline(*graph);
    // Folds what a module's constants decide (nn.Embedding's `max_norm is not None`, Conv1d's
    // padding_mode), so the ops the input reaches are the ones that run.
    torch::jit::ConstantPropagation(graph);
    if (graph->inputs().size() == args.size()) reader.emplace(module, graph);
  } catch (const std::exception&) {
    reader.reset();  // a graph that cannot be read says nothing: every argument is then unknown
  }
  for (size_t i = 1; i < args.size(); ++i) {  // 0 is self
    InputFinding f;
    f.name = args[i].name();
    const bool tensor = is_tensor_type(args[i].type());
    const bool has_default = args[i].default_value().has_value();
    f.described = tensor ? fmt::format("{}; dtype and shape not declared", args[i].type()->annotation_str())
                         : args[i].type()->annotation_str();
    if (tensor && reader) {
      try {
        if (auto rows = reader->table_rows(reader->argument(i))) {
          f.bind(InputBinding::Kind::kTokens, *rows);
        } else if (time_axis == 1 || time_axis == 2) {
          if (auto c = reader->features(reader->argument(i), time_axis == 2); c && *c > 0)
            f.bind(InputBinding::Kind::kFeatures, *c);
        }
      } catch (const std::exception&) {
        f.binding.reset();
      }
    }
    if (!f.binding && tensor && !has_default && looks_like_mask(f.name)) f.bind(InputBinding::Kind::kOnes, 0);
    if (!f.binding) {
      f.left_out = has_default;
      f.pass = tensor ? fmt::format("pass --input {}=tokens:V or {}=features:C", f.name, f.name)
                      : "not a tensor, and the audit feeds tensors: give it a default or export a forward of tensors";
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace grassaudit
