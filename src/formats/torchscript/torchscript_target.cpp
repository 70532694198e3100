#include "formats/torchscript/torchscript_target.h"

#include "audit/audit_refusal.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/constants.h>

#include <cmath>
#include <set>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include "formats/torchscript/torchscript_archive.h"
#include "formats/torchscript/incremental_api.h"
#include "formats/torchscript/torchscript_units.h"
#include "formats/torch/torch2_ops.h"
#include "audit/zero_redraw.h"
#include "runtime/pickle_guard.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/error_text.h"
#include "util/sha256.h"

namespace grassaudit {

namespace {
std::vector<ForwardArgument> forward_arguments(torch::jit::Module& m) {
  std::vector<ForwardArgument> out;
  const auto& args = m.get_method("forward").function().getSchema().arguments();
  for (size_t i = 1; i < args.size(); ++i)  // 0 is self
    out.push_back(ForwardArgument{args[i].name(), args[i].type()->annotation_str(), args[i].default_value().has_value()});
  return out;
}

InputBinding one_input(const InputSpec& in) {
  InputBinding b;
  b.kind = in.kind == InputSpec::Kind::kTokens ? InputBinding::Kind::kTokens : InputBinding::Kind::kFeatures;
  b.size = in.size;
  return b;
}
}  // namespace

TorchScriptTarget::TorchScriptTarget(const std::string& path, const InputSpec& input)
    : TorchScriptTarget(path, std::vector<InputBinding>{one_input(input)}, 1, input.feature_scale) {}

std::unique_ptr<torch::jit::Module> load_torchscript_module(const std::string& path) {
  read_file(path);  // missing / directory / unreadable: one-line error naming the path
  ensure_torch2_ops();  // what PyTorch 2.x files call and this LibTorch lacks
  // The audit runs the model's own arithmetic, op by op: no fuser. LibTorch 2.x fuses elementwise
  // ops on the CPU (NNC, compiled with LLVM after the profiling runs), which in Debian 13's 2.6
  // never finished compiling a 3-op group (seen: a cat + zeros_like + add model hung in
  // LLVMCodeGen); a fused kernel would also be specialised per shape, and the audit compares
  // passes of different shapes. 1.13 does not fuse on the CPU: nothing changes there.
  torch::jit::setTensorExprFuserEnabled(false);
  check_archive_pickles(path, "damaged TorchScript file");  // before the unpickler sizes anything
  std::unique_ptr<torch::jit::Module> module;
  try {
    module = std::make_unique<torch::jit::Module>(torch::jit::load(path));
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: {}", path, explain_torchscript_load_failure(path, e.what_without_backtrace())));
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: {}", path, explain_torchscript_load_failure(path, e.what())));
  }
  if (!module->find_method("forward"))
    throw InputError(fmt::format("{}: TorchScript module has no forward method", path));
  return module;
}

TorchScriptTarget::TorchScriptTarget(const std::string& path, const std::vector<InputBinding>& inputs,
                                     int64_t time_axis, double feature_scale)
    : path_(path) {
  module_ = load_torchscript_module(path);
  try {
    signature_ = ModelSignature(forward_arguments(*module_), inputs, time_axis, feature_scale);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  for (const auto& p : module_->parameters()) {
    if (at::isFloatingType(p.scalar_type())) {
      dtype_ = p.scalar_type();
      break;
    }
  }
  own_dtype_ = dtype_;
  active_ = module_.get();
}

TorchScriptTarget::~TorchScriptTarget() = default;

std::string TorchScriptTarget::describe() const {
  return fmt::format("TorchScript {} ({}){}", path_, signature_.describe_inputs(),
                     output_path_.empty() ? "" : " output " + output_path_);
}

c10::IValue TorchScriptTarget::call(const at::Tensor& x) {
  // A failure names the length and batch it happened at: a traced model runs only at the
  // shapes it was traced with, and that is the usual reason a length fails.
  auto failed = [&](const std::string& why) {
    return InputError(fmt::format(
        "{}: forward failed at L={} (input [{}] {}): {}; if it was exported with torch.jit.trace it runs only at its "
        "traced shapes: audit at that length (--seq-len L --seq-lens L) or export with torch.jit.script",
        path_, x.dim() >= 2 ? x.size(1) : 0, fmt::join(x.sizes().vec(), ", "), c10::toString(x.scalar_type()), why));
  };
  try {
    torch::jit::Kwargs kwargs;
    for (auto& [name, value] : signature_.arguments(x)) {
      if (value.isTensor() && value.toTensor().device() != device_) value = value.toTensor().to(device_);
      kwargs.emplace(name, std::move(value));
    }
    return active_->get_method("forward")({}, kwargs);
  } catch (const c10::Error& e) {
    throw failed(first_meaningful_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw failed(interpreter_error_line(e.what()));
  }
}

at::Tensor TorchScriptTarget::forward(const at::Tensor& x) {
  const c10::IValue out = call(x);
  if (state_.restores_after_forward()) restore_state();
  return signature_.file_leaf(out, output_path_, path_);
}

TorchScriptUnits& TorchScriptTarget::unit_copy() {
  if (!units_ || !units_->made_from(*active_)) {
    units_.reset();
    auto copy = std::make_unique<TorchScriptUnits>(*active_);
    if (unit_list_.empty()) {
      unit_list_ = copy->units();
    } else {
      // The promoted or moved copy runs the same code: the same units, else none are named.
      const auto& now = copy->units();
      const bool same = now.size() == unit_list_.size() &&
                        std::equal(now.begin(), now.end(), unit_list_.begin(),
                                   [](const ProbeUnit& a, const ProbeUnit& b) { return a.path == b.path; });
      if (!same) throw InputError("the module's copy in another dtype or device calls other submodules");
    }
    units_ = std::move(copy);
  }
  return *units_;
}

UnitProbe* TorchScriptTarget::unit_probe() {
  if (!unit_list_.empty()) return this;
  try {
    unit_copy();
    return this;
  } catch (const c10::Error& e) {
    no_units_ = "its forward could not be instrumented: " + first_meaningful_line(e.what_without_backtrace());
  } catch (const std::exception& e) {
    no_units_ = std::string("its forward could not be instrumented: ") + e.what();
  }
  return nullptr;
}

const std::vector<ProbeUnit>& TorchScriptTarget::units() { return unit_list_; }

std::vector<UnitValues> TorchScriptTarget::run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) {
  TorchScriptUnits& copy = unit_copy();
  std::vector<UnitValues> values(unit_list_.size());
  c10::IValue out;
  try {
    torch::jit::Kwargs kwargs;
    for (auto& [name, value] : signature_.arguments(x)) {
      if (value.isTensor() && value.toTensor().device() != device_) value = value.toTensor().to(device_);
      kwargs.emplace(name, std::move(value));
    }
    std::vector<c10::IValue> stack{active_->_ivalue()};
    active_->get_method("forward").function().getSchema().checkAndNormalizeInputs(stack, kwargs);
    out = copy.run(std::move(stack), fed, held, values);
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: the instrumented forward failed: {}", path_,
                                 first_meaningful_line(e.what_without_backtrace())));
  }
  if (state_.restores_after_forward()) restore_state();
  values[0] = UnitValues{true, {x}, {signature_.file_leaf(out, output_path_, path_)}};
  return values;
}

std::vector<OutputLeaf> TorchScriptTarget::output_leaves(int64_t L) {
  return look_at_outputs(L, 2, dtype_, [this](const at::Tensor& x) { return call(x); });
}

void TorchScriptTarget::set_train(bool train) { active_->train(train); }

std::optional<TrainModeProof> TorchScriptTarget::train_mode_proof() {
  if (!train_proof_) train_proof_ = prove_train_equals_eval(*module_);
  return train_proof_;
}
bool TorchScriptTarget::is_training() const { return active_->is_training(); }

namespace {
// Floating parameters and buffers to dtype (as Python's Module.double() does); jit::Module::to
// would also cast integer buffers such as index tables and break the model.
// twins: the copies kept between switches (audit/dtype_twins.h); nullptr converts afresh.
void convert_floating(torch::jit::Module& m, at::ScalarType dtype, DtypeTwins* twins) {
  at::NoGradGuard no_grad;
  auto convert = [&](const std::string& key, const at::Tensor& t) {
    return twins ? twins->convert(key, t, dtype) : t.to(dtype);
  };
  for (const auto& p : m.named_parameters(/*recurse=*/true))
    if (at::isFloatingType(p.value.scalar_type())) p.value.set_data(convert("p:" + p.name, p.value));
  for (const auto& b : m.named_buffers(/*recurse=*/true))
    if (at::isFloatingType(b.value.scalar_type())) b.value.set_data(convert("b:" + b.name, b.value));
}

// In every method graph of every submodule: float32 tensor constants become float64 and constant
// dtype arguments that say float32 (what torch.jit.trace bakes: zeros(..., dtype=6)) say float64.
struct Promoted {
  int tensors = 0, dtypes = 0;
};
void promote_block(torch::jit::Block* block, torch::jit::Graph& g, Promoted& n) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* b : node->blocks()) promote_block(b, g, n);
    if (node->kind() == c10::prim::Constant) {
      if (node->output()->type()->kind() != c10::TypeKind::TensorType) continue;
      auto v = torch::jit::toIValue(node->output());
      if (v && v->isTensor() && v->toTensor().scalar_type() == at::kFloat) {
        const at::Tensor t = v->toTensor().to(at::kDouble);
        node->t_(c10::attr::value, t);
        node->output()->inferTypeFrom(t);
        ++n.tensors;
      }
      continue;
    }
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema) continue;
    for (size_t i = 0; i < schema->arguments().size() && i < node->inputs().size(); ++i) {
      if (schema->arguments()[i].name() != "dtype") continue;
      torch::jit::Value* in = node->input(i);
      if (in->node()->kind() != c10::prim::Constant) continue;
      auto v = torch::jit::toIValue(in);
      if (!v || !v->isInt() || v->toInt() != static_cast<int64_t>(at::kFloat)) continue;
      torch::jit::WithInsertPoint guard(node);
      node->replaceInput(i, g.insertConstant(static_cast<int64_t>(at::kDouble)));
      ++n.dtypes;
    }
  }
}
}  // namespace

bool TorchScriptTarget::to_device(const c10::Device& device, std::string* why) {
  if (device == device_) return true;
  // Module::to moves parameters and buffers only; the graphs' tensor constants and plain tensor
  // attributes stay where the file put them. Loading the file again mapped to the device moves
  // everything (before any audit: nothing of this module has changed since it was loaded).
  return attempt_or_explain(why, [&] {
    auto moved = std::make_unique<torch::jit::Module>(torch::jit::load(path_, device));
    moved->train(active_->is_training());
    module_ = std::move(moved);
    module64_.reset();  // promoted again, on the device, if the float64 forward needs it
    active_ = module_.get();
    for (auto& [name, v] : state_.record)
      if (v.isTensor()) v = v.toTensor().to(device);
    twins_.clear();  // copies kept on the old device
    device_ = device;
  });
}

bool TorchScriptTarget::to_dtype(at::ScalarType dtype, std::string* why) {
  return attempt_or_explain(why, [&] {
    if (module64_) {  // promoted: float64 runs the promoted copy, the own dtype the original
      const bool training = active_->is_training();
      active_ = dtype == at::kDouble ? module64_.get() : module_.get();
      if (dtype != at::kDouble && dtype != own_dtype_) convert_floating(*module_, dtype, &twins_);
      active_->train(training);
    } else {
      convert_floating(*module_, dtype, &twins_);
    }
    dtype_ = dtype;
    // The recorded state follows the conversion (restoring must not undo it).
    for (auto& [name, v] : state_.record)
      if (v.isTensor() && at::isFloatingType(v.toTensor().scalar_type())) v = v.toTensor().to(dtype);
  });
}

bool TorchScriptTarget::promote_float32_constants(std::string* what) {
  if (module64_) return false;  // tried already
  try {
    auto copy = std::make_unique<torch::jit::Module>(torch::jit::load(path_, device_));
    Promoted n;
    for (const auto& sub : copy->modules())
      for (const auto& method : sub.get_methods()) {
        auto g = method.graph();
        promote_block(g->block(), *g, n);
      }
    if (n.tensors + n.dtypes == 0) return false;
    convert_floating(*copy, at::kDouble, nullptr);
    copy->train(active_->is_training());
    convert_floating(*module_, own_dtype_, &twins_);  // the original goes back to its own dtype, exactly
    module64_ = std::move(copy);
    active_ = module64_.get();
    dtype_ = at::kDouble;
    if (what)
      *what = fmt::format("the graph's float32 constants promoted to float64 ({} tensor constants, {} dtype arguments)",
                          n.tensors, n.dtypes);
    return true;
  } catch (const std::exception& e) {
    module64_.reset();
    active_ = module_.get();
    return false;
  }
}

namespace {
// The module that holds dotted attribute `name`, and the last component.
std::pair<torch::jit::Module, std::string> owner_of(const torch::jit::Module& root, const std::string& name) {
  torch::jit::Module m = root;
  size_t start = 0;
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
    m = m.attr(name.substr(start, dot - start)).toModule();
    start = dot + 1;
  }
  return {m, name.substr(start)};
}

}  // namespace

std::string TorchScriptTarget::incremental_missing() {
  if (auto why = check_incremental_api(*module_); !why.empty()) return why;
  return incremental_signature_missing(signature_);
}

namespace {
// One run of a module's step from its init_state (formats/torchscript/incremental_api.h).
class TorchScriptRun : public IncrementalRun {
 public:
  TorchScriptRun(torch::jit::Module& m, std::string path, int64_t batch, c10::Device device)
      : m_(m), path_(std::move(path)), device_(device) {
    state_ = invoke("init_state", {c10::IValue(batch)});
    if (!state_.isTensorList() && !state_.isList())
      throw InputError(fmt::format("{}: init_state did not return a List[Tensor]", path_));
  }
  at::Tensor step(const at::Tensor& x) override {
    const c10::IValue out = invoke("step", {c10::IValue(x.to(device_)), state_});
    if (!out.isTuple() || out.toTupleRef().elements().size() != 2 || !out.toTupleRef().elements()[0].isTensor())
      throw InputError(fmt::format("{}: step did not return Tuple[Tensor, List[Tensor]]", path_));
    state_ = out.toTupleRef().elements()[1];
    return out.toTupleRef().elements()[0].toTensor();
  }

 private:
  c10::IValue invoke(const char* name, std::vector<c10::IValue> args) {
    try {
      return m_.get_method(name)(std::move(args));
    } catch (const c10::Error& e) {
      throw InputError(
          fmt::format("{}: {} failed: {}", path_, name, interpreter_error_line(e.what_without_backtrace())));
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}: {} failed: {}", path_, name, interpreter_error_line(e.what())));
    }
  }
  torch::jit::Module& m_;
  std::string path_;
  c10::Device device_;
  c10::IValue state_;
};
}  // namespace

std::unique_ptr<IncrementalRun> TorchScriptTarget::start_incremental(int64_t batch) {
  require_incremental(*this);
  return std::make_unique<TorchScriptRun>(*active_, path_, batch, device_);
}

std::vector<at::Tensor> TorchScriptTarget::jitter_parameters() {
  std::vector<at::Tensor> out;
  for (const auto& p : active_->parameters(/*recurse=*/true)) out.push_back(p);
  return out;
}

void TorchScriptTarget::snapshot_state(bool restore) {
  std::set<std::string> params;
  for (const auto& p : active_->named_parameters(/*recurse=*/true)) params.insert(p.name);
  state_.record.clear();
  for (const auto& a : active_->named_attributes(/*recurse=*/true)) {
    // Parameters are the weights (hashed, never restored); `training` is the mode the audit sets.
    if (params.count(a.name) || a.name == "training" ||
        (a.name.size() > 9 && a.name.compare(a.name.size() - 9, 9, ".training") == 0))
      continue;
    const auto& v = a.value;
    if (v.isTensor())
      state_.record.emplace_back(a.name, v.toTensor().detach().clone());
    else if (v.isInt() || v.isDouble() || v.isBool() || v.isString())
      state_.record.emplace_back(a.name, v);
  }
  state_.start(restore);
}

std::string TorchScriptTarget::changed_state() {
  for (const auto& [name, old] : state_.record) {
    auto [owner, leaf] = owner_of(*active_, name);
    if (auto moved = state_change(name, old, owner.attr(leaf)); !moved.empty()) return moved;
  }
  return {};
}

void TorchScriptTarget::restore_state() {
  at::NoGradGuard no_grad;
  for (const auto& [name, old] : state_.record) {
    auto [owner, leaf] = owner_of(*active_, name);
    if (old.isTensor()) {
      const c10::IValue now = owner.attr(leaf);
      if (now.isTensor() && now.toTensor().sizes() == old.toTensor().sizes() &&
          now.toTensor().scalar_type() == old.toTensor().scalar_type())
        now.toTensor().copy_(old.toTensor());
      else
        owner.setattr(leaf, old.toTensor().clone());
    } else {
      owner.setattr(leaf, old);
    }
  }
}

void TorchScriptTarget::end_state_tracking() {
  state_.end([this] { restore_state(); });
}

void TorchScriptTarget::hold_state(bool hold) {
  state_.hold(hold, [this] { restore_state(); });
}

namespace {
void set_parameter(torch::jit::Module& m, const std::string& name, const at::Tensor& value) {
  for (const auto& p : m.named_parameters(/*recurse=*/true))
    if (p.name == name) {
      p.value.detach().copy_(value.to(p.value.scalar_type()));
      return;
    }
}
}  // namespace

std::vector<RedrawnTensor> TorchScriptTarget::redraw_zero_parameters(uint64_t seed) {
  at::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> params;
  for (const auto& p : module_->named_parameters(/*recurse=*/true)) params.emplace_back(p.name, p.value);
  std::vector<RedrawnTensor> out;
  for (const auto& r : plan_zero_redraws(params, seed)) {
    for (const auto& [name, value] : params)
      if (name == r.record.name) redrawn_.emplace_back(name, value.detach().clone());  // before the draw
    set_parameter(*module_, r.record.name, r.drawn);
    if (module64_) set_parameter(*module64_, r.record.name, r.drawn);
    out.push_back(r.record);
  }
  return out;
}

void TorchScriptTarget::restore_redrawn_parameters() {
  at::NoGradGuard no_grad;
  for (const auto& [name, zeros] : redrawn_) {
    set_parameter(*module_, name, zeros);
    if (module64_) set_parameter(*module64_, name, zeros);
  }
  redrawn_.clear();
}

std::string TorchScriptTarget::weights_hash() {
  Sha256 h;
  for (const auto& p : module_->named_parameters()) {
    auto c = p.value.detach().cpu().contiguous();  // the bytes, wherever the module runs
    h.update(p.name.data(), p.name.size());
    h.update(c.data_ptr(), c.numel() * c.element_size());
  }
  for (const auto& b : module_->named_buffers()) {
    auto c = b.value.detach().cpu().contiguous();
    h.update(b.name.data(), b.name.size());
    h.update(c.data_ptr(), c.numel() * c.element_size());
  }
  return h.hex_digest();
}

}  // namespace grassaudit
