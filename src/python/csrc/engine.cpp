// grassaudit._engine: the audit engine of the CLI (src/audit), driven from Python on a live
// torch.nn.Module. The module is reached through a Python adapter (grassaudit/_adapter.py) that
// does only what needs Python: calling the module, copying it to float64, reading and writing its
// attributes. Every check, every decision, the JSON and the text summary are the engine's own:
// PyModuleTarget is one more ModelFileTarget beside the TorchScript and torch.export ones.
//
// The engine runs with the GIL released and takes it for each call into Python: LibTorch's
// autograd refuses a backward (the gradient method) called while the GIL is held.
#include <torch/csrc/jit/api/module.h>
#include <torch/extension.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_option_fields.h"
#include "audit/audit_refusal.h"
#include "audit/causality_audit.h"
#include "audit/incremental_audit.h"
#include "audit/inputs_inferred.h"
#include "audit/model_file_target.h"
#include "audit/output_audit.h"
#include "audit/property_search.h"
#include "audit/train_mode_proof.h"
#include "audit/unit_probe.h"
#include "audit/zero_redraw.h"
#include "report/figures/gnuplot.h"
#include "report/figures/leak_map_figure.h"
#include "util/error.h"
#include "util/error_text.h"
#include "util/sha256.h"

namespace py = pybind11;

namespace grassaudit {
namespace {

// A Python exception that ends the audit as it is (KeyboardInterrupt, SystemExit, MemoryError):
// deliberately not a std::exception, so that no handler in the engine that turns a failure into a
// fallback (float32 instead of float64, a gradient check "not run") can take it for a model's
// failure. Its destructors still run: the target is put back as it was on the way out.
struct PythonInterrupt {
  py::error_already_set error;
};

at::ScalarType dtype_from_name(const std::string& name) {
  static const std::map<std::string, at::ScalarType> names{{"float32", at::kFloat},
                                                           {"float64", at::kDouble},
                                                           {"float16", at::kHalf},
                                                           {"bfloat16", at::kBFloat16}};
  const auto it = names.find(name);
  return it == names.end() ? at::kFloat : it->second;
}

std::string adapter_dtype_name(at::ScalarType t) {  // the adapter's names (_adapter._DTYPES)
  switch (t) {
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    default: return "float32";
  }
}

// A normalised Python output (tensors, tuples, lists, dicts; _adapter.normalize_output made the
// dict-like and dataclass outputs plain dicts) as the IValue ModelSignature walks: the leaves and
// their paths are then exactly the CLI's.
c10::IValue to_ivalue(const py::handle& obj) {
  if (THPVariable_Check(obj.ptr())) return c10::IValue(THPVariable_Unpack(obj.ptr()));
  if (obj.is_none()) return c10::IValue();
  if (py::isinstance<py::bool_>(obj)) return c10::IValue(obj.cast<bool>());
  if (py::isinstance<py::int_>(obj)) return c10::IValue(obj.cast<int64_t>());
  if (py::isinstance<py::float_>(obj)) return c10::IValue(obj.cast<double>());
  if (py::isinstance<py::str>(obj)) return c10::IValue(obj.cast<std::string>());
  if (py::isinstance<py::tuple>(obj)) {
    std::vector<c10::IValue> items;
    for (const auto& item : obj.cast<py::tuple>()) items.push_back(to_ivalue(item));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (py::isinstance<py::list>(obj)) {
    c10::impl::GenericList list(c10::AnyType::get());
    for (const auto& item : obj.cast<py::list>()) list.push_back(to_ivalue(item));
    return list;
  }
  if (py::isinstance<py::dict>(obj)) {
    const auto d = obj.cast<py::dict>();
    bool int_keys = d.size() > 0;
    for (const auto& kv : d) int_keys = int_keys && py::isinstance<py::int_>(kv.first) && !py::isinstance<py::bool_>(kv.first);
    c10::impl::GenericDict out(int_keys ? c10::TypePtr(c10::IntType::get()) : c10::TypePtr(c10::StringType::get()),
                               c10::AnyType::get());
    for (const auto& kv : d) {
      const c10::IValue key = int_keys ? c10::IValue(kv.first.cast<int64_t>()) : c10::IValue(py::str(kv.first).cast<std::string>());
      out.insert(key, to_ivalue(kv.second));
    }
    return out;
  }
  // Anything else is a leaf that is not a tensor: named by its Python type.
  return c10::IValue(std::string(py::str(obj.get_type().attr("__name__"))));
}

// A recorded attribute or buffer value: tensors cloned; int, float, bool, str as they are.
std::optional<c10::IValue> state_value(const py::handle& v) {
  if (THPVariable_Check(v.ptr())) return c10::IValue(THPVariable_Unpack(v.ptr()).detach().clone());
  if (py::isinstance<py::bool_>(v)) return c10::IValue(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) {
    try {
      return c10::IValue(v.cast<int64_t>());
    } catch (const py::cast_error&) {
      return std::nullopt;  // beyond int64: not a counter the audit can follow
    }
  }
  if (py::isinstance<py::float_>(v)) return c10::IValue(v.cast<double>());
  if (py::isinstance<py::str>(v)) return c10::IValue(v.cast<std::string>());
  return std::nullopt;
}

py::object to_py(const c10::IValue& v) {
  if (v.isTensor()) return py::cast(v.toTensor());
  if (v.isBool()) return py::bool_(v.toBool());
  if (v.isInt()) return py::int_(v.toInt());
  if (v.isDouble()) return py::float_(v.toDouble());
  if (v.isString()) return py::str(v.toStringRef());
  return py::none();
}

class PyModuleTarget;

// One incremental run: the module's own init_state(batch) / step(x, state), as plain methods.
class PyIncrementalRun : public IncrementalRun {
 public:
  PyIncrementalRun(PyModuleTarget& target, int64_t batch);
  ~PyIncrementalRun() override;
  at::Tensor step(const at::Tensor& x) override;

 private:
  PyModuleTarget& target_;
  py::object state_;
};

class PyModuleTarget : public ModelFileTarget, public UnitProbe {
 public:
  PyModuleTarget(py::object adapter, const std::vector<InputBinding>& inputs, int64_t time_axis, double feature_scale)
      : adapter_(std::move(adapter)) {
    std::vector<ForwardArgument> args;
    for (const auto& a : adapter_.attr("arguments")().cast<py::list>()) {
      const auto t = a.cast<py::tuple>();
      args.push_back(ForwardArgument{t[0].cast<std::string>(), t[1].cast<std::string>(), t[2].cast<bool>()});
    }
    name_ = adapter_.attr("describe")().cast<std::string>();
    try {
      signature_ = ModelSignature(args, inputs, time_axis, feature_scale);
    } catch (const InputError& e) {  // the arguments do not fit: named as the CLI names the file
      throw InputError(fmt::format("nn.Module {}: {}", name_, e.what()));
    }
    own_dtype_ = dtype_ = dtype_from_name(adapter_.attr("own_dtype")().cast<std::string>());
    device_ = c10::Device(adapter_.attr("device_name")().cast<std::string>());
  }

  // The Python exception behind `message` (a forward, init_state or step that raised), or None.
  py::object python_cause(const std::string& message) const {
    for (const auto& [line, exception] : raised_)
      if (message.find(line) != std::string::npos) return exception;
    return py::none();
  }

  std::string describe() const override {
    return fmt::format("nn.Module {} ({}){}", name_, signature_.describe_inputs(),
                       output_path_.empty() ? "" : " output " + output_path_);
  }
  const char* format() const override { return "nn.Module"; }
  const ModelSignature& signature() const override { return signature_; }

  at::Tensor forward(const at::Tensor& x) override {
    const c10::IValue out = call(x);
    if (restore_ && !held_) restore_state();
    try {
      return signature_.leaf(out, output_path_);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", describe(), e.what()));
    }
  }

  // Where a leak enters: the module and its submodules (named_modules), each forward recorded by
  // the adapter (its call_units); the root's values are the engine's own: its input and the
  // audited output leaf.
  UnitProbe* unit_probe() override { return this; }
  const std::vector<ProbeUnit>& units() override {
    if (units_.empty())
      guarded([&] {
        for (const auto& item : adapter_.attr("units")().cast<py::list>()) {
          const auto t = item.cast<py::tuple>();
          const std::string source = t[2].cast<std::string>();
          units_.push_back(ProbeUnit{t[0].cast<std::string>(), t[1].cast<std::string>(),
                                     source.empty() ? std::nullopt : std::optional<std::string>(source), std::nullopt,
                                     t[3].cast<int>()});
        }
      });
    return units_;
  }
  std::vector<UnitValues> run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) override {
    std::vector<UnitValues> values(units().size());
    c10::IValue out;
    {
      py::gil_scoped_acquire gil;
      py::dict kwargs, f, h;
      for (auto& [name, value] : signature_.arguments(x)) kwargs[py::str(name)] = py::cast(value.toTensor());
      for (const auto& [u, ts] : fed) f[py::int_(u)] = py::cast(ts);
      for (const auto& [u, ts] : held) h[py::int_(u)] = py::cast(ts);
      py::tuple res;
      try {
        res = adapter_.attr("call_units")(kwargs, f, h).cast<py::tuple>();
      } catch (py::error_already_set& e) {
        rethrow_python(e, [&](const std::string& line) { return fmt::format("{}: forward failed: {}", describe(), line); });
      }
      out = to_ivalue(res[0]);
      const auto records = res[1].cast<py::list>();
      for (size_t u = 1; u < values.size() && u < records.size(); ++u) {
        const auto r = records[u].cast<py::tuple>();
        values[u].called = r[0].cast<bool>();
        values[u].inputs = r[1].cast<std::vector<at::Tensor>>();
        values[u].outputs = r[2].cast<std::vector<at::Tensor>>();
      }
    }
    if (restore_ && !held_) restore_state();
    values[0] = UnitValues{true, {x}, {signature_.leaf(out, output_path_)}};
    return values;
  }

  std::vector<OutputLeaf> output_leaves(int64_t L) override {
    return look_at_outputs(L, 2, dtype_, [this](const at::Tensor& x) { return call(x); });
  }
  void select_output(const std::string& path) override { output_path_ = path; }
  const std::string& selected_output() const override { return output_path_; }

  void set_train(bool train) override { guarded([&] { adapter_.attr("set_train")(train); }); }
  bool is_training() const override {
    return const_cast<PyModuleTarget*>(this)->guarded([&] { return adapter_.attr("is_training")().cast<bool>(); });
  }
  // float64 runs a converted copy (copy.deepcopy(module).double()); the own dtype the module itself.
  bool to_dtype(at::ScalarType dtype, std::string* why) override {
    const std::string failed = guarded([&] { return adapter_.attr("to_dtype")(adapter_dtype_name(dtype)).cast<std::string>(); });
    if (!failed.empty()) {
      if (why) *why = failed;
      return false;
    }
    dtype_ = dtype;
    for (auto& [name, v] : state_)  // the recorded state follows the conversion
      if (v.isTensor() && at::isFloatingType(v.toTensor().scalar_type())) v = v.toTensor().to(dtype);
    return true;
  }
  at::ScalarType dtype() const override { return dtype_; }
  // Where the module is (its first parameter's device): audited there unless device= moves it.
  c10::Device device() const override { return device_; }
  bool to_device(const c10::Device& device, std::string* why) override {
    const std::string failed = guarded([&] { return adapter_.attr("to_device")(device.str()).cast<std::string>(); });
    if (!failed.empty()) {
      if (why) *why = failed;
      return false;
    }
    device_ = device;
    for (auto& [name, v] : state_)  // the recorded state follows the move
      if (v.isTensor()) v = v.toTensor().to(device);
    return true;
  }
  // The CLI's proof, read from the graph torch.jit.script makes of the module's own code (the
  // adapter says when there is none: it does not script, or its code branches on scripting);
  // nullopt, as for any target without a proof, when there is no graph.
  std::optional<TrainModeProof> train_mode_proof() override {
    if (proof_asked_) return proof_;
    proof_asked_ = true;
    py::gil_scoped_acquire gil;
    try {
      const py::object scripted = adapter_.attr("scripted_for_proof")();
      if (!scripted.is_none()) proof_ = prove_train_equals_eval(scripted.cast<torch::jit::Module>());
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_Exception)) throw PythonInterrupt{e};
    } catch (const py::cast_error&) {  // a torch whose ScriptModule this build cannot see
    }
    return proof_;
  }

  std::vector<at::Tensor> jitter_parameters() override {
    std::vector<at::Tensor> out;
    for (const auto& [name, t] : named_tensors("active_parameters")) out.push_back(t);
    return out;
  }

  std::string incremental_missing() override {
    const std::string missing = guarded([&] { return adapter_.attr("incremental_missing")().cast<std::string>(); });
    if (!missing.empty()) return missing;
    return incremental_signature_missing(signature_);
  }
  std::unique_ptr<IncrementalRun> start_incremental(int64_t batch) override {
    if (auto why = incremental_missing(); !why.empty()) throw InputError(fmt::format("{}: {}", describe(), why));
    return std::make_unique<PyIncrementalRun>(*this, batch);
  }
  // init_state / step of the module forward runs now, wrapped like forward's failures.
  py::object invoke(const char* method, const py::object& a, const py::object& b = py::none()) {
    py::gil_scoped_acquire gil;
    try {
      return adapter_.attr("invoke")(method, a, b);
    } catch (py::error_already_set& e) {
      rethrow_python(e, [&](const std::string& line) { return fmt::format("{}: {} failed: {}", describe(), method, line); });
    }
  }

  void snapshot_state(bool restore) override {
    state_.clear();
    guarded([&] {
      for (const auto& item : adapter_.attr("state_items")().cast<py::list>()) {
        const auto t = item.cast<py::tuple>();
        if (auto v = state_value(t[1])) state_.emplace_back(t[0].cast<std::string>(), std::move(*v));
      }
    });
    tracking_ = true;
    restore_ = restore;
  }
  std::string changed_state() override {
    for (const auto& [name, old] : state_) {
      const c10::IValue now_v = guarded([&] {
        const auto now = state_value(adapter_.attr("state_value")(name));
        return now ? *now : c10::IValue(std::string("<removed>"));
      });
      if (auto moved = state_change(name, old, now_v); !moved.empty()) return moved;  // the CLI's words
    }
    return {};
  }
  void restore_state() override {
    at::NoGradGuard no_grad;
    guarded([&] {
      for (const auto& [name, old] : state_) adapter_.attr("set_state")(name, to_py(old));
    });
  }
  void end_state_tracking() override {
    if (!tracking_) return;
    restore_state();
    tracking_ = restore_ = held_ = false;
    state_.clear();
  }
  void hold_state(bool hold) override {
    const bool release = held_ && !hold;
    held_ = hold;
    if (release && restore_) restore_state();
  }

  bool supports_structural_pass() const override { return true; }
  std::vector<RedrawnTensor> redraw_zero_parameters(uint64_t seed) override {
    at::NoGradGuard no_grad;
    const auto params = named_tensors("own_parameters");
    std::vector<RedrawnTensor> out;
    for (const auto& r : plan_zero_redraws(params, seed)) {
      for (const auto& [name, value] : params)
        if (name == r.record.name) redrawn_.emplace_back(name, value.detach().clone());  // before the draw
      guarded([&] { adapter_.attr("set_parameter")(r.record.name, r.drawn); });
      out.push_back(r.record);
    }
    return out;
  }
  void restore_redrawn_parameters() override {
    at::NoGradGuard no_grad;
    for (const auto& [name, zeros] : redrawn_) guarded([&] { adapter_.attr("set_parameter")(name, zeros); });
    redrawn_.clear();
  }

  // As the TorchScript target hashes its module: every parameter, then every buffer, name and bytes.
  std::string weights_hash() override {
    Sha256 h;
    for (const char* which : {"own_parameters", "own_buffers"})
      for (const auto& [name, t] : named_tensors(which)) {
        auto c = t.detach().cpu().contiguous();
        h.update(name.data(), name.size());
        h.update(c.data_ptr(), c.numel() * c.element_size());
      }
    return h.hex_digest();
  }

  // Runs a call into the adapter; a Python exception there becomes a C++ one the engine knows
  // (InputError, one line), or a PythonInterrupt for the ones that must end the audit.
  template <class F>
  auto guarded(F&& f) -> decltype(f()) {
    py::gil_scoped_acquire gil;
    try {
      return f();
    } catch (py::error_already_set& e) {
      rethrow_python(e, [&](const std::string& line) { return fmt::format("{}: {}", describe(), line); });
    }
  }

  template <class Message>
  [[noreturn]] void rethrow_python(py::error_already_set& e, Message&& message) {
    if (!e.matches(PyExc_Exception)) throw PythonInterrupt{e};  // KeyboardInterrupt, SystemExit, ...
    py::object value = e.value();
    // The traceback's last line ("ValueError: ..."), as Python would print it.
    const std::string line = py::module_::import("grassaudit._adapter").attr("last_line")(value).cast<std::string>();
    raised_.emplace_back(line, value);
    throw InputError(message(line));
  }

 private:
  c10::IValue call(const at::Tensor& x) {
    py::gil_scoped_acquire gil;
    py::dict kwargs;
    for (auto& [name, value] : signature_.arguments(x)) kwargs[py::str(name)] = py::cast(value.toTensor());
    try {
      return to_ivalue(adapter_.attr("call")(kwargs));
    } catch (py::error_already_set& e) {
      rethrow_python(e, [&](const std::string& line) {
        return fmt::format("{}: forward failed at L={} (input [{}] {}): {}", describe(), x.dim() >= 2 ? x.size(1) : 0,
                           fmt::join(x.sizes().vec(), ", "), c10::toString(x.scalar_type()), line);
      });
    }
  }

  std::vector<std::pair<std::string, at::Tensor>> named_tensors(const char* which) {
    std::vector<std::pair<std::string, at::Tensor>> out;
    guarded([&] {
      for (const auto& item : adapter_.attr("named_tensors")(which).cast<py::list>()) {
        const auto t = item.cast<py::tuple>();
        out.emplace_back(t[0].cast<std::string>(), THPVariable_Unpack(t[1].ptr()));
      }
    });
    return out;
  }

  py::object adapter_;
  std::string name_;
  ModelSignature signature_;
  std::string output_path_;
  at::ScalarType dtype_ = at::kFloat, own_dtype_ = at::kFloat;
  c10::Device device_ = c10::Device(c10::kCPU);
  std::vector<std::pair<std::string, c10::IValue>> state_;
  bool tracking_ = false, restore_ = false, held_ = false;
  std::vector<std::pair<std::string, at::Tensor>> redrawn_;
  std::vector<std::pair<std::string, py::object>> raised_;
  std::vector<ProbeUnit> units_;
  bool proof_asked_ = false;
  std::optional<TrainModeProof> proof_;  // every Python exception seen, by its line
};

PyIncrementalRun::PyIncrementalRun(PyModuleTarget& target, int64_t batch) : target_(target) {
  py::gil_scoped_acquire gil;
  state_ = target_.invoke("init_state", py::int_(batch));
}

PyIncrementalRun::~PyIncrementalRun() {
  py::gil_scoped_acquire gil;
  state_ = py::object();
}

at::Tensor PyIncrementalRun::step(const at::Tensor& x) {
  py::gil_scoped_acquire gil;
  const py::object out = target_.invoke("step", py::cast(x), state_);
  if (!py::isinstance<py::tuple>(out) || py::len(out) != 2 || !THPVariable_Check(out.cast<py::tuple>()[0].ptr()))
    throw InputError(fmt::format("{}: step did not return (Tensor, state)", target_.describe()));
  state_ = out.cast<py::tuple>()[1];
  return THPVariable_Unpack(out.cast<py::tuple>()[0].ptr());
}

// The CLI's option checks (src/cli/cmd_audit.cpp), with its messages.
template <class T>
T option(const py::dict& o, const char* key, T fallback) {
  return o.contains(key) && !o[key].is_none() ? o[key].cast<T>() : fallback;
}

// Every keyword of the audit option table (audit/audit_option_fields.h: the flag with '_' for
// '-') that `o` gives (None: not given), set as the CLI sets its flag.
AuditOptions audit_options(const py::dict& o, int64_t seq_len) {
  AuditOptions opt;
  for (const auto& f : audit_option_fields()) {
    const std::string key = option_keyword(f.flag);
    if (f.flag.empty() || !o.contains(key.c_str()) || o[key.c_str()].is_none()) continue;
    const py::object v = o[key.c_str()];
    struct Set {
      const py::object& v;
      const FieldInfo& f;
      void operator()(int64_t* out) const { *out = v.cast<int64_t>(); }
      void operator()(uint64_t* out) const { *out = v.cast<uint64_t>(); }
      void operator()(double* out) const { *out = v.cast<double>(); }
      void operator()(std::string* out) const { *out = v.cast<std::string>(); }
      void operator()(std::vector<int64_t>* out) const { *out = v.cast<std::vector<int64_t>>(); }
      void operator()(bool* out) const {
        if (v.cast<bool>()) *out = f.switch_sets;
      }
      void operator()(std::optional<int64_t>* out) const { *out = v.cast<int64_t>(); }
    };
    std::visit(Set{v, f}, f.ref(opt));
  }
  opt.seq_len = seq_len;
  validate_audit_options(opt);
  for (int64_t l : opt.seq_lens)
    if (l < 2 || l > opt.seq_len) throw InputError(fmt::format("--seq-lens entries must be in [2, --seq-len], got {}", l));
  return opt;
}

py::dict failure(const char* kind, const std::string& message, py::object cause = py::none()) {
  py::dict d;
  d["ok"] = false;
  d["kind"] = kind;
  d["message"] = message;
  d["cause"] = std::move(cause);
  return d;
}

// The audit of `adapter`'s module, as `grassaudit audit --model FILE` runs it. Returns
// {"ok": True, "json": the CLI's --json text, "summary": its stdout, "leaky": bool}, or
// {"ok": False, "kind": "value" (bad arguments) | "model" (the audit cannot take the model) |
// "forward" (forward raised) | "refused" (no verdict possible; "reason": state, nondeterministic or
// incremental), "message": the CLI's one line, "cause": the Python exception}.
py::dict run(py::object adapter, const std::vector<std::string>& input_texts, int64_t seq_len, const py::dict& o) {
  // Arguments first: nothing has run yet, and a mistake here is the caller's (ValueError).
  std::vector<InputBinding> inputs;
  AuditOptions opt;
  std::optional<std::string> only;
  std::unique_ptr<PyModuleTarget> target;
  try {
    if (input_texts.empty())
      throw InputError("--model needs --input [NAME=]tokens:V|features:C|ones|zeros (one per forward argument)");
    for (const auto& text : input_texts) inputs.push_back(InputBinding::parse(text));
    opt = audit_options(o, seq_len);
    const double scale = option<double>(o, "feature_scale", 1.0);
    if (!(scale > 0)) throw InputError("--feature-scale must be > 0");
    if (opt.property_cases) require_property_search();  // before any probe
    if (o.contains("output") && !o["output"].is_none()) {
      only = o["output"].cast<std::string>();
      validate_output_path(*only);
    }
    const bool device_given = o.contains("device") && !o["device"].is_none();
    if (device_given) parse_audit_device(opt.device);  // a device that is not there is the caller's mistake
    target = std::make_unique<PyModuleTarget>(adapter, inputs, option<int64_t>(o, "time_axis", 1), scale);
    if (!device_given) opt.device = target->device().str();  // where the module is
  } catch (const InputError& e) {
    return failure("value", e.what());
  }
  try {
    if (opt.incremental) require_incremental(*target);  // refused before any probe, as the CLI does
    place_on_device(*target, opt.device);  // the module comes back where it was (preserved)
    AuditResult result;
    {
      py::gil_scoped_release released;  // taken again by each call into Python
      result = run_output_audits(*target, opt, only);
      run_model_checks(*target, opt, only, result);
    }
    py::dict d;
    d["ok"] = true;
    // The inputs the package read from the module when none were given (grassaudit/_infer.py).
    const auto inferred = option<InputsInferred>(o, "inputs_inferred", {});
    nlohmann::json facts = to_json(result);
    add_inputs_inferred(facts, inferred);
    d["json"] = facts.dump(2) + "\n";
    d["summary"] = with_inputs_inferred(summarize(result), inferred);
    d["leaky"] = result.leaky();
    return d;
  } catch (PythonInterrupt& interrupt) {
    throw std::move(interrupt.error);  // pybind11 raises it again in Python, as it was
  } catch (const AuditRefusal& e) {  // no verdict is possible: the reason travels with it
    py::dict d = failure("refused", e.what());
    d["reason"] = refusal_name(e.reason());
    return d;
  } catch (const InputError& e) {
    py::object cause = target->python_cause(e.what());
    return failure(cause.is_none() ? "model" : "forward", e.what(), cause);
  } catch (const c10::Error& e) {
    return failure("model", first_meaningful_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return failure("model", first_meaningful_line(e.what()));
  }
}

}  // namespace
}  // namespace grassaudit

PYBIND11_MODULE(_engine, m) {
  m.doc() = "The grassaudit causality-audit engine (the CLI's C++ code), driven on a live torch.nn.Module.";
  m.def("run", &grassaudit::run, py::arg("adapter"), py::arg("inputs"), py::arg("seq_len"), py::arg("options"));
  // The RapidCheck runner (grassaudit._property_runner's capsule), or None and why property=N
  // cannot run: set once by the package's __init__.
  m.def(
      "set_property_runner",
      [](py::object capsule, const std::string& why_missing) {
        if (capsule.is_none()) {
          grassaudit::set_property_search_runner(nullptr, why_missing);
          return;
        }
        void* p = PyCapsule_GetPointer(capsule.ptr(), "grassaudit._property_runner.search");
        if (!p) throw py::error_already_set();
        grassaudit::set_property_search_runner(reinterpret_cast<GaPropertySearch>(p), "");
      },
      py::arg("capsule"), py::arg("why_missing") = "");
  m.def("has_property_search", &grassaudit::has_property_search);
  // The audit option table's keywords (audit/audit_option_fields.h): [(keyword, default as JSON
  // text, is a switch)], which grassaudit.audit's signature must offer (tests/python).
  m.def("audit_option_keywords", [] {
    py::list out;
    const grassaudit::AuditOptions defaults;
    const nlohmann::json values = grassaudit::audit_options_to_json(defaults);
    for (const auto& f : grassaudit::audit_option_fields())
      if (!f.flag.empty())
        out.append(py::make_tuple(grassaudit::option_keyword(f.flag), values.at(f.key).dump(),
                                  f.kind == grassaudit::FieldKind::kSwitch));
    return out;
  });
  // The leak map of a report's JSON as a picture, drawn as `grassaudit audit --leak-map FILE.svg|png`
  // draws it (report/figures/leak_map_figure.h: the same gnuplot script): ext "svg" or "png" -> bytes.
  m.def(
      "leak_map_picture",
      [](const std::string& json_text, const std::string& ext) {
        if (ext != "svg" && ext != "png") throw grassaudit::InputError("the picture is svg or png, not " + ext);
        if (!grassaudit::find_program("gnuplot"))
          throw grassaudit::InputError("gnuplot was not found: install gnuplot to draw the leak map");
        return py::bytes(grassaudit::draw_leak_map(nlohmann::json::parse(json_text), ext, "gnuplot"));
      },
      py::arg("json_text"), py::arg("ext"));
}
