#include "formats/onnx/streaming_program.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>

#include "formats/onnx/onnx_tensor.h"
#include "util/error.h"

namespace grassaudit::onnx_rt {

namespace {

constexpr int64_t kDynamicChunk = 4;

// --state-init FILE: an ONNX model whose graph's initializers are named after the state inputs,
// or one TensorProto (for a model with one state, or named after its state).
std::map<std::string, at::Tensor> read_state_init(const std::string& path, const std::vector<std::string>& names) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(fmt::format("--state-init {}: cannot be opened", path));
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto fail = [&](const std::string& why) { throw InputError(fmt::format("--state-init {}: {}", path, why)); };
  std::map<std::string, at::Tensor> out;
  onnx::ModelProto m;
  if (m.ParseFromString(bytes) && m.has_graph() && m.graph().initializer_size()) {
    for (const auto& t : m.graph().initializer()) out[t.name()] = tensor_from_proto(t, "", fail);
  } else {
    onnx::TensorProto t;
    if (!t.ParseFromString(bytes) || (!t.has_raw_data() && t.dims_size() == 0 && t.float_data_size() == 0))
      fail("neither an ONNX model with the states as initializers nor one ONNX TensorProto");
    const std::string name = !t.name().empty() ? t.name() : names.size() == 1 ? names[0] : "";
    if (name.empty()) fail("one unnamed tensor for several states (name each, or give an ONNX model of initializers)");
    out[name] = tensor_from_proto(t, "", fail);
  }
  for (const auto& [name, t] : out)
    if (std::find(names.begin(), names.end(), name) == names.end())
      fail(fmt::format("holds '{}', which is not a --state input ({})", name, fmt::join(names, ", ")));
  return out;
}

}  // namespace

StreamingProgram::StreamingProgram(std::unique_ptr<OnnxProgram> step, const StreamingOptions& options,
                                   const std::vector<InputBinding>& bindings, int64_t time_axis)
    : step_(std::move(step)), time_axis_(time_axis) {
  const auto& in = step_->inputs();
  const auto& out = step_->output_names();
  auto input_index = [&](const std::string& name) {
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].name == name) return i;
    std::vector<std::string> names;
    for (const auto& g : in) names.push_back(g.name);
    throw InputError(fmt::format("--state {}: the graph has no input '{}' (inputs: {})", name, name, fmt::join(names, ", ")));
  };
  std::vector<std::string> state_names;
  for (const auto& [i_name, o_name] : options.state) {
    State s;
    s.input = input_index(i_name);
    auto it = std::find(out.begin(), out.end(), o_name);
    if (it == out.end())
      throw InputError(fmt::format("--state {}={}: the graph has no output '{}' (outputs: {})", i_name, o_name, o_name,
                                   fmt::join(out, ", ")));
    s.output = static_cast<size_t>(it - out.begin());
    for (const auto& other : states_)
      if (other.input == s.input || other.output == s.output)
        throw InputError(fmt::format("--state {}={}: a state input or output named twice", i_name, o_name));
    states_.push_back(s);
    state_names.push_back(i_name);
  }
  if (!options.state_init.empty()) {
    const auto init = read_state_init(options.state_init, state_names);
    for (size_t k = 0; k < states_.size(); ++k) {
      auto it = init.find(state_names[k]);
      if (it != init.end()) states_[k].init = it->second;
    }
  }
  for (const auto& s : states_) {
    const GraphInput& g = in[s.input];
    if (s.init.defined()) continue;
    int dynamic = 0;
    for (const auto& d : g.sizes) dynamic += !d;
    if (g.sizes.empty() || dynamic > 1)
      throw InputError(fmt::format("state '{}' has {} (the batch may be its one dynamic dimension); give its initial "
                                   "value with --state-init",
                                   g.name, g.sizes.empty() ? "no declared shape" : "more than one dynamic dimension"));
  }
  // The inputs the audit binds: every step input but the states. Those bound to tokens or
  // features are timed; the others (const, ones, zeros) are fed whole to every call.
  std::map<std::string, bool> perturbed_by_name;
  std::vector<bool> perturbed_in_order;
  for (const auto& b : bindings) {
    if (!b.name.empty()) perturbed_by_name[b.name] = b.perturbed();
    else perturbed_in_order.push_back(b.perturbed());
  }
  size_t order = 0;
  bool first_timed = true;
  for (size_t i = 0; i < in.size(); ++i) {
    bool is_state = false;
    for (const auto& s : states_) is_state = is_state || s.input == i;
    if (is_state) continue;
    GraphInput g = in[i];
    bool timed;
    auto named = perturbed_by_name.find(g.name);
    if (named != perturbed_by_name.end()) timed = named->second;
    else timed = order < perturbed_in_order.size() && perturbed_in_order[order++];
    if (timed) {
      const bool ids = !at::isFloatingType(g.dtype);
      const size_t full_rank = ids ? 2 : 3;  // the rank of the signature's tensor ([B, L] ids, [B, L, C] features)
      bool frame_axis;
      if (g.sizes.empty() || g.sizes.size() == full_rank) frame_axis = true;
      else if (g.sizes.size() + 1 == full_rank) frame_axis = false;
      else
        throw InputError(fmt::format("input '{}' has rank {}: a streamed {} input is [B, n{}] (n frames per call) or [B{}] "
                                     "(one step per call)",
                                     g.name, g.sizes.size(), ids ? "ids" : "features", ids ? "" : ", C", ids ? "" : ", F"));
      int64_t n = 1;
      if (frame_axis && time_axis_ < static_cast<int64_t>(g.sizes.size()) && g.sizes[time_axis_]) n = *g.sizes[time_axis_];
      else if (frame_axis) n = kDynamicChunk;
      if (!first_timed && (frame_axis != frame_axis_ || n != frames_))
        throw InputError(fmt::format("the streamed inputs differ in their frames per call ('{}': {})", g.name, n));
      first_timed = false;
      frame_axis_ = frame_axis;
      frames_ = n;
      if (frame_axis) {
        if (time_axis_ < static_cast<int64_t>(g.sizes.size())) g.sizes[time_axis_] = std::nullopt;
      } else {
        g.sizes.insert(g.sizes.begin() + std::min<size_t>(time_axis_, g.sizes.size()), std::nullopt);
        g.ranges.insert(g.ranges.begin() + std::min<size_t>(time_axis_, g.ranges.size()), {1, -1});
      }
    }
    inputs_.push_back(g);
    step_index_.push_back(i);
    timed_.push_back(timed);
  }
  if (first_timed) throw InputError("no input of the step is bound to tokens or features (nothing to stream)");
  for (size_t o = 0; o < out.size(); ++o) {
    bool is_state = false;
    for (const auto& s : states_) is_state = is_state || s.output == o;
    if (!is_state) outputs_.push_back(o);
  }
  if (outputs_.empty()) throw InputError("every output of the step is a state: nothing to audit");
}

std::string StreamingProgram::describe() const {
  std::vector<std::string> pairs;
  for (const auto& s : states_)
    pairs.push_back(fmt::format("{}={}", step_->inputs()[s.input].name, step_->output_names()[s.output]));
  return fmt::format("{}; streamed {} per call, state {}", step_->describe(),
                     frame_axis_ ? fmt::format("{} frame{}", frames_, frames_ == 1 ? "" : "s") : std::string("one step"),
                     fmt::join(pairs, ", "));
}

at::Tensor StreamingProgram::initial_state(const State& s, int64_t batch) const {
  const GraphInput& g = step_->inputs()[s.input];
  at::ScalarType dtype = g.dtype;
  if (at::isFloatingType(dtype))
    for (const auto& [name, p] : step_->parameters())
      if (at::isFloatingType(p.scalar_type())) {
        dtype = p.scalar_type();  // a float64 run carries float64 state
        break;
      }
  std::vector<int64_t> shape;
  for (const auto& d : g.sizes) shape.push_back(d ? *d : batch);
  if (!s.init.defined()) return at::zeros(shape, dtype);
  at::Tensor t = s.init.to(dtype);
  if (t.dim() == static_cast<int64_t>(shape.size())) {
    std::vector<int64_t> want = t.sizes().vec();
    for (size_t d = 0; d < shape.size(); ++d)
      if (!g.sizes[d] && want[d] == 1) want[d] = batch;  // one initial value for every row
    t = t.expand(want).contiguous();
  }
  return t;
}

c10::IValue StreamingProgram::run(const std::vector<at::Tensor>& user_inputs) {
  if (user_inputs.size() != inputs_.size())
    throw InputError(fmt::format("the streamed graph takes {} inputs, got {}", inputs_.size(), user_inputs.size()));
  int64_t L = -1, B = -1;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (timed_[i]) {
      L = user_inputs[i].size(time_axis_);
      B = user_inputs[i].size(0);
      break;
    }
  const int64_t n = frame_axis_ ? frames_ : 1;
  const int64_t calls = (L + n - 1) / n;
  std::vector<at::Tensor> state;
  for (const auto& s : states_) state.push_back(initial_state(s, B));
  std::vector<std::vector<at::Tensor>> pieces(outputs_.size());
  std::vector<at::Tensor> args(step_->inputs().size());
  for (int64_t k = 0; k < calls; ++k) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const at::Tensor& x = user_inputs[i];
      at::Tensor a = x;
      if (timed_[i]) {
        const int64_t start = k * n, len = std::min(n, L - start);
        a = x.narrow(time_axis_, start, len);
        if (len < n) {  // the last chunk: padded with zeros to the graph's frames per call
          std::vector<int64_t> pad_shape = a.sizes().vec();
          pad_shape[time_axis_] = n - len;
          a = at::cat({a, at::zeros(pad_shape, a.options())}, time_axis_);
        }
        if (!frame_axis_) a = a.squeeze(time_axis_);
      }
      args[step_index_[i]] = a;
    }
    for (size_t s = 0; s < states_.size(); ++s) args[states_[s].input] = state[s];
    std::vector<at::Tensor> out = step_->run_all(args);
    for (size_t s = 0; s < states_.size(); ++s) state[s] = out[states_[s].output];
    for (size_t j = 0; j < outputs_.size(); ++j) {
      at::Tensor y = out[outputs_[j]];
      const bool frames = frame_axis_ && y.dim() > time_axis_ && y.size(time_axis_) == n;
      pieces[j].push_back(frames ? y : y.unsqueeze(std::min<int64_t>(time_axis_, y.dim())));
    }
  }
  std::vector<at::Tensor> result;
  for (auto& p : pieces) {
    at::Tensor y = at::cat(p, std::min<int64_t>(time_axis_, p[0].dim() - 1));
    if (frame_axis_ && y.size(time_axis_) == calls * n) y = y.narrow(time_axis_, 0, L);  // drop the padding's outputs
    result.push_back(y);
  }
  if (result.size() == 1) return result[0];
  c10::Dict<std::string, at::Tensor> dict;
  for (size_t j = 0; j < outputs_.size(); ++j) dict.insert(step_->output_names()[outputs_[j]], result[j]);
  return dict;
}

}  // namespace grassaudit::onnx_rt
