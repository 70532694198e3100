#include <ATen/ATen.h>
#include <fmt/format.h>

#include "formats/onnx/onnx_op.h"

// Control flow: If runs one branch, Loop its body until the trip count or the condition ends it
// (both over values: a branch or a loop may carry a sequence), Scan its body over slices of its
// scan inputs. Bodies are sub-graphs that see the names around
// them (OpContext::run_subgraph).
namespace grassaudit::onnx_rt {

namespace {

// The iterations' slices of one scan output stacked along a new first axis, refused when that
// would hold more than a node may make.
at::Tensor stacked(const OpContext& c, const Ts& slices) {
  std::vector<int64_t> shape = slices[0].sizes().vec();
  shape.insert(shape.begin(), static_cast<int64_t>(slices.size()));
  c.check_size(shape, "a scan output");
  return at::stack(slices, 0);
}

// If and Loop pass values: a branch may return a sequence, a Loop may carry one (a scripted loop
// that appends to a list).
Vs op_if(OpContext& c) {
  const at::Tensor& cond = c.required(0);
  if (cond.numel() != 1) c.fail(fmt::format("the condition has {} elements, not one", cond.numel()));
  return c.run_subgraph_values(cond.item<bool>() ? "then_branch" : "else_branch", {});
}

// Loop(M?, cond?, v_initial...) -> (v_final..., scan_outputs...)
// body(iteration_num, cond, v...) -> (cond, v..., scan_slices...)
Vs op_loop(OpContext& c) {
  const at::Tensor max_trip = c.input(0), cond_in = c.input(1);
  if (max_trip.defined() && max_trip.numel() != 1) c.fail("the trip count is not one number");
  if (cond_in.defined() && cond_in.numel() != 1) c.fail("the condition is not one value");
  const size_t n_carried = c.num_values() > 2 ? c.num_values() - 2 : 0;
  Vs carried;
  for (size_t i = 0; i < n_carried; ++i) {
    if (!c.value(2 + i).defined()) c.fail(fmt::format("input {} is required but absent", 2 + i));
    carried.push_back(c.value(2 + i));
  }
  const int64_t trips = max_trip.defined() ? max_trip.item<int64_t>() : -1;
  bool cond = cond_in.defined() ? cond_in.item<bool>() : true;
  std::vector<Ts> scans;
  // Each iteration is a sub-graph call, which the run's limit on them ends.
  for (int64_t it = 0; (trips < 0 || it < trips) && cond; ++it) {
    Vs in{Value(at::scalar_tensor(it, at::kLong)), Value(at::scalar_tensor(cond, at::kBool))};
    in.insert(in.end(), carried.begin(), carried.end());
    Vs out = c.run_subgraph_values("body", in);
    if (out.size() < 1 + n_carried) c.fail(fmt::format("the body returns {} values, needs at least {}", out.size(), 1 + n_carried));
    if (out[0].is_sequence() || out[0].tensor.numel() != 1) c.fail("the body's condition is not one value");
    cond = out[0].tensor.item<bool>();
    for (size_t i = 0; i < n_carried; ++i) carried[i] = out[1 + i];
    if (scans.empty()) scans.resize(out.size() - 1 - n_carried);
    for (size_t k = 0; k < scans.size(); ++k) {
      if (out[1 + n_carried + k].is_sequence()) c.fail("a scan output of the body is a sequence");
      scans[k].push_back(out[1 + n_carried + k].tensor);
    }
  }
  Vs result = carried;
  const size_t n_scan = static_cast<size_t>(c.num_outputs()) > n_carried ? c.num_outputs() - n_carried : 0;
  for (size_t k = 0; k < n_scan; ++k) {
    if (k < scans.size() && !scans[k].empty()) result.emplace_back(stacked(c, scans[k]));
    else result.emplace_back(at::empty({0}, at::kFloat));  // no iteration ran: an empty scan output
  }
  return result;
}

// Scan(state_initial..., scan_inputs...) -> (state_final..., scan_outputs...)
// body(state..., slices...) -> (state..., output slices...)
Ts op_scan(OpContext& c) {
  if (c.opset() < 9) c.fail("Scan before opset 9 (with a batch axis and sequence_lens) is not read");
  const int64_t m = c.attr_int("num_scan_inputs", 0);
  const int64_t n = static_cast<int64_t>(c.num_inputs()) - m;
  if (m <= 0 || n < 0) c.fail("num_scan_inputs does not fit the inputs");
  std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes"), in_dirs = c.attr_ints("scan_input_directions");
  in_axes.resize(m, 0);
  in_dirs.resize(m, 0);
  Ts state, scan_in;
  for (int64_t i = 0; i < n; ++i) state.push_back(c.required(i));
  int64_t length = -1;
  for (int64_t j = 0; j < m; ++j) {
    at::Tensor x = c.required(n + j);
    const int64_t axis = norm_axis(c, in_axes[j], x.dim());
    x = x.movedim(axis, 0);
    if (in_dirs[j]) x = x.flip({0});
    if (length >= 0 && x.size(0) != length) c.fail("scan inputs differ in length");
    length = x.size(0);
    scan_in.push_back(x);
  }
  std::vector<Ts> outs;
  for (int64_t t = 0; t < length; ++t) {
    Ts in = state;
    for (const auto& x : scan_in) in.push_back(x[t]);
    Ts out = c.run_subgraph("body", in);
    if (static_cast<int64_t>(out.size()) < n) c.fail("the body returns fewer values than the scan carries");
    for (int64_t i = 0; i < n; ++i) state[i] = out[i];
    if (outs.empty()) outs.resize(out.size() - n);
    for (size_t k = 0; k < outs.size(); ++k) outs[k].push_back(out[n + k]);
  }
  const int64_t k_out = c.num_outputs() - n;
  std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes"), out_dirs = c.attr_ints("scan_output_directions");
  out_axes.resize(std::max<int64_t>(k_out, 0), 0);
  out_dirs.resize(std::max<int64_t>(k_out, 0), 0);
  Ts result = state;
  for (int64_t k = 0; k < k_out; ++k) {
    if (k >= static_cast<int64_t>(outs.size()) || outs[k].empty()) c.fail("a scan output with no iterations");
    at::Tensor y = stacked(c, outs[k]);
    if (out_dirs[k]) y = y.flip({0});
    y = y.movedim(0, norm_axis(c, out_axes[k], y.dim()));
    result.push_back(y);
  }
  return result;
}

}  // namespace

void add_control_ops(OpTable& t) { t["Scan"] = op_scan; }

void add_control_value_ops(ValueOpTable& t) {
  t["If"] = op_if;
  t["Loop"] = op_loop;
}

}  // namespace grassaudit::onnx_rt
