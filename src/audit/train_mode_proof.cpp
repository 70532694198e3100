#include "audit/train_mode_proof.h"

#include <fmt/format.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <set>

#include "util/error_text.h"

namespace grassaudit {

namespace {

// aten ops that draw from the RNG (their overloads without a Generator argument included).
const std::set<std::string>& random_ops() {
  static const std::set<std::string> ops{
      "rand",           "rand_like",       "randn",       "randn_like",      "randint",
      "randint_like",   "randperm",        "bernoulli",   "bernoulli_",      "normal",
      "normal_",        "multinomial",     "poisson",     "binomial",        "uniform_",
      "random_",        "exponential_",    "geometric_",  "cauchy_",         "log_normal_",
      "rrelu",          "rrelu_",          "rrelu_with_noise", "rrelu_with_noise_", "_standard_gamma",
      "_sample_dirichlet", "_fused_dropout", "seed",       "manual_seed",     "initial_seed",
      "_no_grad_uniform_", "_no_grad_normal_"};  // torch.nn.init's builtins
  return ops;
}
// Recurrent layers with inter-layer dropout (their argument is `dropout`, their flag `train`, and
// they take no Generator): random unless train is the constant false or dropout the constant 0.
const std::set<std::string>& recurrent_ops() {
  static const std::set<std::string> ops{"lstm", "gru", "rnn_tanh", "rnn_relu", "quantized_lstm", "quantized_gru"};
  return ops;
}

// A TorchScript class (not a module) anywhere in `type`: its methods (__enter__, __lt__, ...) run
// at run time through ops whose bodies the inliner never sees (prim::Enter, aten::sort on objects).
// With `containers`, lists and dicts count too: state the audit does not put back between passes
// (it restores tensors, int, float, bool and str attributes), so a list, dict or object attribute
// can carry one call into the next, and the number of calls -- which the proof changes -- could
// change outputs.
bool holds_class(const c10::TypePtr& type, bool containers = false) {
  if (const auto cls = type->cast<c10::ClassType>()) return !cls->is_module();
  if (containers && (type->kind() == c10::TypeKind::ListType || type->kind() == c10::TypeKind::DictType)) return true;
  for (const auto& t : type->containedTypes())
    if (holds_class(t, containers)) return true;
  return false;
}
// Dropout ops: random unless their `train` argument is the constant false.
const std::set<std::string>& dropout_ops() {
  static const std::set<std::string> ops{"dropout",       "dropout_",       "feature_dropout",
                                         "feature_dropout_", "alpha_dropout", "alpha_dropout_",
                                         "feature_alpha_dropout", "feature_alpha_dropout_", "native_dropout"};
  return ops;
}

// The input of `node` bound to schema argument `name`, or null.
const torch::jit::Value* named_input(const torch::jit::Node* node, const std::string& name) {
  const c10::FunctionSchema* schema = node->maybeSchema();
  if (!schema) return nullptr;
  const auto& args = schema->arguments();
  for (size_t i = 0; i < args.size() && i < node->inputs().size(); ++i)
    if (args[i].name() == name) return node->inputs()[i];
  return nullptr;
}

// v is a prim::Constant false / 0.0 (null, or anything else: no).
bool constant_false(const torch::jit::Value* v) {
  if (!v || v->node()->kind() != c10::prim::Constant) return false;
  const auto iv = torch::jit::toIValue(v);
  return iv && iv->isBool() && !iv->toBool();
}
bool constant_zero(const torch::jit::Value* v) {
  if (!v || v->node()->kind() != c10::prim::Constant) return false;
  const auto iv = torch::jit::toIValue(v);
  return iv && iv->isDouble() && iv->toDouble() == 0.0;
}

// "" when `node` keeps train == eval, else what breaks it.
std::string blocker(const torch::jit::Node* node) {
  const c10::Symbol kind = node->kind();
  const std::string name = kind.toQualString();
  if (kind == c10::prim::GetAttr && node->s(c10::attr::name) == "training") return "it reads `training`";
  if (kind == c10::prim::GetAttr && holds_class(node->output()->type(), /*containers=*/true))
    return fmt::format("it reads attribute `{}`, a {} the audit does not restore between passes",
                       node->s(c10::attr::name), node->output()->type()->annotation_str());
  if (kind == c10::prim::SetAttr) return fmt::format("it writes attribute `{}`", node->s(c10::attr::name));
  if (kind == c10::prim::CallMethod || kind == c10::prim::CallFunction)
    return fmt::format("it calls {} through {}, which the inliner could not resolve (an interface, or a call "
                       "inside a fork)",
                       kind == c10::prim::CallMethod ? node->s(c10::attr::name) : "a function", name);
  if (kind == c10::prim::PythonOp) return "it calls Python (prim::PythonOp)";
  for (const auto* v : node->inputs())
    if (holds_class(v->type()))
      return fmt::format("{} takes a TorchScript class object ({}), whose methods run unseen",
                         name, v->type()->annotation_str());
  for (const auto* v : node->outputs())
    if (holds_class(v->type()))
      return fmt::format("{} makes a TorchScript class object ({}), whose methods run unseen",
                         name, v->type()->annotation_str());
  if (!kind.is_aten() && !kind.is_prim()) return fmt::format("it calls {}, an op outside aten:: and prim::", name);
  if (!kind.is_aten()) return {};
  const std::string op = kind.toUnqualString();
  if (random_ops().count(op)) return fmt::format("it draws random numbers ({})", name);
  if (dropout_ops().count(op) && !constant_false(named_input(node, "train")))
    return fmt::format("it calls {} with a train flag that is not the constant false", name);
  if (recurrent_ops().count(op) && !constant_false(named_input(node, "train")) &&
      !constant_zero(named_input(node, "dropout")))
    return fmt::format("it calls {} with inter-layer dropout that is not off (train or dropout not constant)", name);
  // scaled_dot_product_attention and its kernels (_scaled_dot_product_flash_attention, ...).
  const auto* dropout_p = named_input(node, "dropout_p");  // null without a schema: sdpa is then blocked
  if ((dropout_p || op == "scaled_dot_product_attention") && !constant_zero(dropout_p))
    return fmt::format("it calls {} with a dropout_p that is not the constant 0", name);
  if (const c10::FunctionSchema* schema = node->maybeSchema())
    for (const auto& a : schema->arguments())
      if (a.type()->str().find("Generator") != std::string::npos)
        return fmt::format("it calls {}, which takes a random Generator", name);
  return {};
}

// Every node of `block`, its sub-blocks and subgraphs (prim::fork): the first blocker, counting nodes.
std::string scan(const torch::jit::Block* block, int64_t& nodes) {
  for (const torch::jit::Node* node : block->nodes()) {
    ++nodes;
    if (auto why = blocker(node); !why.empty()) return why;
    for (const torch::jit::Block* b : node->blocks())
      if (auto why = scan(b, nodes); !why.empty()) return why;
    if (node->hasAttribute(c10::attr::Subgraph))
      if (auto why = scan(node->g(c10::attr::Subgraph)->block(), nodes); !why.empty()) return why;
  }
  return {};
}

}  // namespace

TrainModeProof prove_train_equals_eval(const torch::jit::Module& module) {
  TrainModeProof p;
  try {
    auto method = module.find_method("forward");
    if (!method) {
      p.why = "no forward method";
      return p;
    }
    auto graph = method->graph()->copy();  // the module's own graph stays as it is
    torch::jit::Inline(*graph);
    int64_t nodes = 0;
    const std::string why = scan(graph->block(), nodes);
    if (!why.empty()) {
      p.why = "not proven: " + why;
      return p;
    }
    p.proven = true;
    p.why = fmt::format("forward ({} nodes, every call inlined) never reads `training` and draws no random numbers",
                        nodes);
  } catch (const std::exception& e) {
    p.proven = false;
    p.why = "not proven: the graph could not be read (" + first_meaningful_line(e.what()) + ")";
  }
  return p;
}

}  // namespace grassaudit
