#include "formats/graph/graph_program_target.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "audit/zero_redraw.h"
#include "util/error.h"
#include "util/error_text.h"
#include "util/sha256.h"

namespace grassaudit {

GraphProgramTarget::GraphProgramTarget(const char* format, const std::string& path,
                                       std::unique_ptr<GraphProgram> program, const std::vector<InputBinding>& inputs,
                                       int64_t time_axis, double feature_scale)
    : format_(format), path_(path), program_(std::move(program)) {
  std::vector<ForwardArgument> args;
  for (const auto& in : program_->inputs()) args.push_back(ForwardArgument{in.name, "Tensor", false});
  try {
    signature_ = ModelSignature(args, inputs, time_axis, feature_scale);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  // What the export declares: the batch sizes (dimension 0 of any input) and the sequence lengths
  // (the time dimension of a perturbed input; dimension 1 of a held ones/zeros input) it runs at,
  // static or a range; inputs that share a dimension share its range.
  std::map<std::string, const GraphInput*> by_name;
  for (const auto& in : program_->inputs()) by_name[in.name] = &in;
  auto declared = [](const GraphInput& in, size_t d) {
    if (in.sizes[d]) return DeclaredRange{*in.sizes[d], *in.sizes[d]};
    if (d >= in.ranges.size()) return DeclaredRange{};
    return DeclaredRange{std::max<int64_t>(1, in.ranges[d].first), in.ranges[d].second};
  };
  try {
    for (const auto& b : signature_.bindings()) {
      auto it = by_name.find(b.name);
      if (it == by_name.end() || it->second->sizes.empty()) continue;
      const GraphInput& in = *it->second;
      batch_range_ = batch_range_.intersect(declared(in, 0), fmt::format("the batch dimension of input '{}'", in.name));
      const size_t t = b.perturbed() ? static_cast<size_t>(time_axis) : 1;
      if (t < in.sizes.size())
        len_range_ = len_range_.intersect(declared(in, t), fmt::format("the sequence dimension of input '{}'", in.name));
    }
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  for (const auto& p : program_->parameters())
    if (at::isFloatingType(p.second.scalar_type())) {
      dtype_ = p.second.scalar_type();
      break;
    }
  own_dtype_ = dtype_;
}

GraphProgramTarget::~GraphProgramTarget() = default;

std::string GraphProgramTarget::describe() const {
  return fmt::format("{} {} ({}){}", format_, path_, signature_.describe_inputs(),
                     output_path_.empty() ? "" : " output " + output_path_);
}

std::vector<std::string> GraphProgramTarget::notes() const {
  std::vector<std::string> out;
  out.push_back(fmt::format("{} ({}) is one fixed graph: train mode runs what was exported, dropout "
                            "nodes as exported (reseeded per pass)",
                            program_->noun(), program_->describe()));
  if (program_->has_no_grad_region())
    out.push_back("part of the graph runs with gradients switched off (torch.no_grad(): wrap_with_set_grad_enabled): "
                  "no gradient crosses it, so the gradient check cannot see what it reads; the perturbation tables "
                  "decide");
  const DeclaredRange& b = batch_range_;
  if (b.is_static())
    out.push_back(fmt::format("the file runs at batch size {} only (its batch dimension is fixed in the file): every "
                              "pass runs in calls of {} row{}{}",
                              b.lo, b.lo, b.lo == 1 ? "" : "s",
                              b.lo == 1 ? "; at batch 1 the batch check has nothing to test (each row runs alone)" : ""));
  else if (!b.any())
    out.push_back(fmt::format("the file runs at batch sizes {} only (its range constraints): every pass runs in calls "
                              "of {} rows{}",
                              b.str(), b.hi < 0 ? fmt::format("at least {}", b.lo) : fmt::format("{} to {}", b.lo, b.hi),
                              b.lo > 1 ? fmt::format(", a shorter call padded to {} with copies of its last row", b.lo)
                                       : ""));
  return out;
}

std::vector<at::Tensor> GraphProgramTarget::graph_arguments(const at::Tensor& x) {
  std::map<std::string, at::Tensor> named;
  for (auto& [name, value] : signature_.arguments(x)) named[name] = value.toTensor();
  std::vector<at::Tensor> args;
  for (const auto& in : program_->inputs()) {
    auto it = named.find(in.name);
    if (it == named.end())
      throw InputError(fmt::format("{}: no --input for the graph's argument '{}' ({})", path_, in.name,
                                   ModelSignature::describe_arguments({ForwardArgument{in.name, "Tensor", false}})));
    args.push_back(it->second);
  }
  return args;
}

template <class F>
c10::IValue GraphProgramTarget::named_call(const at::Tensor& x, F f) {
  auto failed = [&](const std::string& why) {
    return InputError(fmt::format("{}: forward failed at L={} (input [{}] {}): {}", path_, x.dim() >= 2 ? x.size(1) : 0,
                                  fmt::join(x.sizes().vec(), ", "), c10::toString(x.scalar_type()), why));
  };
  try {
    return f();
  } catch (const InputError& e) {
    throw failed(e.what());
  } catch (const c10::Error& e) {  // a value of the wrong kind between nodes (a damaged graph)
    throw failed(first_meaningful_line(e.what_without_backtrace()));
  }
}

c10::IValue GraphProgramTarget::call(const at::Tensor& x) {
  const std::vector<at::Tensor> args = graph_arguments(x);
  return named_call(x, [&] { return program_->run(args); });
}

UnitProbe* GraphProgramTarget::unit_probe() { return program_->units().empty() ? nullptr : this; }

std::string GraphProgramTarget::why_no_units() const { return program_->why_no_units(); }

std::vector<UnitValues> GraphProgramTarget::run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) {
  // The units' values are one call's: a pass the file runs only in several calls is not split.
  if (!batch_range_.contains(x.size(0)))
    throw InputError(fmt::format("the units are recorded in one call of the graph, and the file does not run {} rows "
                                 "in one call (its batch sizes: {})",
                                 x.size(0), batch_range_.str()));
  const std::vector<at::Tensor> args = graph_arguments(x);
  std::vector<UnitValues> values(program_->units().size());
  const c10::IValue out = named_call(x, [&] { return program_->run_units(args, fed, held, values); });
  if (state_.restores_after_forward()) restore_state();
  values[0] = UnitValues{true, {x}, {signature_.file_leaf(out, output_path_, path_)}};
  return values;
}

at::Tensor GraphProgramTarget::forward(const at::Tensor& x) {
  auto leaf = [&](const at::Tensor& rows) {
    const c10::IValue out = call(rows);
    if (state_.restores_after_forward()) restore_state();
    return signature_.file_leaf(out, output_path_, path_);
  };
  const int64_t B = x.size(0);
  if (batch_range_.contains(B)) return leaf(x);
  // Outside the declared batch sizes: calls of at most `hi` rows, a shorter one padded to `lo`
  // rows with copies of its last row (each row of a call is computed on its own rows only if the
  // model is batch-independent, which the batch check tests within a call).
  const int64_t lo = batch_range_.lo, chunk = batch_range_.hi >= 0 ? std::min(B, batch_range_.hi) : B;
  std::vector<at::Tensor> parts;
  for (int64_t s = 0; s < B; s += chunk) {
    const int64_t n = std::min(chunk, B - s);
    at::Tensor rows = x.narrow(0, s, n);
    if (n < lo) {
      std::vector<int64_t> idx(lo);
      for (int64_t i = 0; i < lo; ++i) idx[i] = std::min(i, n - 1);
      rows = rows.index_select(0, at::tensor(idx, at::kLong));
    }
    parts.push_back(leaf(rows).narrow(0, 0, n));
  }
  return at::cat(parts, 0);
}

std::vector<OutputLeaf> GraphProgramTarget::output_leaves(int64_t L) {
  // Two rows where the file runs two, else the nearest size it declares.
  const int64_t rows = std::max(batch_range_.lo, batch_range_.hi < 0 ? 2 : std::min<int64_t>(2, batch_range_.hi));
  return look_at_outputs(L, rows, dtype_, [this](const at::Tensor& x) { return call(x); });
}

bool GraphProgramTarget::to_dtype(at::ScalarType dtype, std::string* why) {
  return attempt_or_explain(why, [&] {
    at::NoGradGuard no_grad;
    int list_index = 0;
    for (auto* list : {&program_->parameters(), &program_->buffers(), &program_->constants()}) {
      const std::string prefix = std::to_string(list_index++) + ":";
      for (auto& [name, t] : *list)
        if (at::isFloatingType(t.scalar_type())) t = twins_.convert(prefix + name, t, dtype);
    }
    for (auto& [name, t] : state_.record)
      if (at::isFloatingType(t.scalar_type())) t = t.to(dtype);
    program_->promote_dtype_arguments(promoted_ && dtype == at::kDouble);
    dtype_ = dtype;
  });
}

bool GraphProgramTarget::promote_float32_constants(std::string* what) {
  if (promoted_) return false;  // tried already
  const int n = program_->promote_dtype_arguments(dtype_ == at::kDouble);
  if (n == 0) {
    program_->promote_dtype_arguments(false);
    return false;
  }
  promoted_ = true;
  if (what) *what = fmt::format("the graph's float32 dtype arguments promoted to float64 ({} arguments)", n);
  return true;
}

std::optional<TrainModeProof> GraphProgramTarget::train_mode_proof() {
  TrainModeProof p;
  const std::string random = program_->first_random_node();
  p.proven = random.empty();
  p.why = p.proven ? fmt::format("the exported graph is fixed (train() and eval() do not change it) and none of its "
                                 "{} op kinds draws random numbers",
                                 program_->op_census().size())
                   : fmt::format("node {} draws random numbers", random);
  return p;
}

std::vector<at::Tensor> GraphProgramTarget::jitter_parameters() {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : program_->parameters())
    if (at::isFloatingType(t.scalar_type())) out.push_back(t);
  return out;
}

std::vector<RedrawnTensor> GraphProgramTarget::redraw_zero_parameters(uint64_t seed) {
  auto& params = program_->parameters();
  std::vector<RedrawnTensor> out;
  for (const auto& r : plan_zero_redraws(params, seed)) {
    for (auto& [name, t] : params)
      if (name == r.record.name) {
        redrawn_.emplace_back(name, t);  // the forward reads the list: the zeros are kept aside, not copied over
        t = r.drawn.to(t.scalar_type());
      }
    out.push_back(r.record);
  }
  return out;
}

void GraphProgramTarget::restore_redrawn_parameters() {
  for (auto& [name, t] : program_->parameters())
    for (const auto& [zname, zeros] : redrawn_)
      if (name == zname) t = zeros.to(t.scalar_type());
  redrawn_.clear();
}

void GraphProgramTarget::snapshot_state(bool restore) {
  state_.record.clear();
  for (const auto& [name, t] : program_->buffers()) state_.record.emplace_back(name, t.detach().clone());
  state_.start(restore);
}

std::string GraphProgramTarget::changed_state() {
  const auto& buffers = program_->buffers();
  for (size_t i = 0; i < state_.record.size() && i < buffers.size(); ++i) {
    const at::Tensor& now = buffers[i].second;
    const at::Tensor& old = state_.record[i].second;
    if (now.sizes() != old.sizes() || now.scalar_type() != old.scalar_type() || !at::equal(now, old))
      return fmt::format("buffer '{}' ({} [{}] -> other values)", state_.record[i].first, c10::toString(old.scalar_type()),
                         fmt::join(old.sizes().vec(), ", "));
  }
  return {};
}

void GraphProgramTarget::restore_state() {
  at::NoGradGuard no_grad;
  auto& buffers = program_->buffers();
  for (size_t i = 0; i < state_.record.size() && i < buffers.size(); ++i) {
    at::Tensor& now = buffers[i].second;
    if (now.sizes() == state_.record[i].second.sizes() && now.scalar_type() == state_.record[i].second.scalar_type())
      now.copy_(state_.record[i].second);
    else
      now = state_.record[i].second.clone();
  }
}

void GraphProgramTarget::end_state_tracking() {
  state_.end([this] { restore_state(); });
}

void GraphProgramTarget::hold_state(bool hold) {
  state_.hold(hold, [this] { restore_state(); });
}

std::string GraphProgramTarget::weights_hash() {
  Sha256 h;
  for (auto* list : {&program_->parameters(), &program_->buffers()})
    for (const auto& [name, t] : *list) {
      auto c = t.detach().contiguous();
      h.update(name.data(), name.size());
      h.update(c.data_ptr(), c.numel() * c.element_size());
    }
  return h.hex_digest();
}

}  // namespace grassaudit
