#include "formats/export/exported_program.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "formats/export/export_graph.h"
#include "util/error.h"

// The facade: what the audit asks of an ExportedProgram. Reading it: export_archive.cpp (the
// archive), export_program_reader.cpp (inputs, outputs), export_graph_reader.cpp (the nodes),
// export_serde.cpp (the schema's values); running it: export_interpreter.cpp,
// export_higher_order.cpp.
namespace grassaudit {

using namespace exported;

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

c10::IValue ExportedProgram::run(const std::vector<at::Tensor>& user_inputs) { return run_with(user_inputs, nullptr); }

c10::IValue ExportedProgram::run_with(const std::vector<at::Tensor>& user_inputs, UnitRecorder* recorder) {
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
  im.execute(env, recorder);
  if (recorder)  // what the graph returns reads the held units' outputs
    for (auto& [slot, t] : recorder->reads(im.steps.size(), [&](int k) {
           return env[k].isTensor() ? env[k].toTensor() : at::Tensor();
         }))
      env[slot] = std::move(t);
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
