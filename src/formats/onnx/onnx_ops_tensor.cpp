#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <limits>

#include "formats/onnx/onnx_op.h"
#include "formats/onnx/onnx_tensor.h"

// Shapes, indexing, slicing, casts and constants. Shapes are int64 tensors as ONNX has them; the
// index ops accept negative indices (counted from the end) as the spec says.
namespace grassaudit::onnx_rt {

namespace {

at::Tensor long_tensor(const std::vector<int64_t>& v) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).reshape({static_cast<int64_t>(v.size())});
}

int64_t clamp_index(int64_t i, int64_t lo, int64_t hi) { return std::min(std::max(i, lo), hi); }

Ts op_shape(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t r = x.dim();
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = clamp_index(start, 0, r);
  end = clamp_index(end, 0, r);
  std::vector<int64_t> s;
  for (int64_t d = start; d < end; ++d) s.push_back(x.size(d));
  return one(long_tensor(s));
}

Ts op_size(OpContext& c) { return one(at::scalar_tensor(c.required(0).numel(), at::kLong)); }

// A negative index counts from the end of `dim`.
at::Tensor wrap_indices(const at::Tensor& idx, int64_t dim) {
  const at::Tensor i = idx.to(at::kLong);
  return at::where(i < 0, i + dim, i);
}

Ts op_gather(OpContext& c) {
  const at::Tensor &x = c.required(0), &idx = c.required(1);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const at::Tensor i = wrap_indices(idx, x.size(axis));
  // Output shape: x.shape[:axis] + idx.shape + x.shape[axis+1:]
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
  for (int64_t s : idx.sizes()) shape.push_back(s);
  for (int64_t d = axis + 1; d < x.dim(); ++d) shape.push_back(x.size(d));
  c.check_size(shape, "the output");
  at::Tensor flat = at::index_select(x, axis, i.reshape({-1}));
  return one(flat.reshape(shape));
}

Ts op_gather_elements(OpContext& c) {
  const at::Tensor &x = c.required(0), &idx = c.required(1);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  return one(at::gather(x, axis, wrap_indices(idx, x.size(axis))));
}

Ts op_gather_nd(OpContext& c) {
  const at::Tensor &x = c.required(0), &idx_in = c.required(1);
  const int64_t b = c.attr_int("batch_dims", 0);
  const at::Tensor idx = idx_in.to(at::kLong);
  const int64_t k = idx.size(-1);
  if (b < 0 || b >= idx.dim() || k > x.dim() - b)
    c.fail(fmt::format("batch_dims {} and index depth {} do not fit data of rank {} and indices of rank {}", b, k, x.dim(),
                       idx.dim()));
  // x [batch..., d_b..d_{b+k-1}, rest...], idx [batch..., m..., k]
  std::vector<int64_t> batch(x.sizes().begin(), x.sizes().begin() + b);
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  std::vector<int64_t> rest(x.sizes().begin() + b + k, x.sizes().end());
  const at::Tensor xb = x.reshape({nb, -1});  // flattened over the indexed and rest dims
  int64_t rest_n = 1;
  for (int64_t s : rest) rest_n *= s;
  const at::Tensor ib = idx.reshape({nb, -1, k});
  at::Tensor lin = at::zeros({nb, ib.size(1)}, at::kLong);
  for (int64_t j = 0; j < k; ++j) {
    const int64_t dim = x.size(b + j);
    at::Tensor ij = ib.select(2, j);
    ij = at::where(ij < 0, ij + dim, ij);
    lin = lin * dim + ij;
  }
  const at::Tensor g = xb.reshape({nb, -1, rest_n}).gather(1, lin.unsqueeze(2).expand({nb, lin.size(1), rest_n}));
  std::vector<int64_t> shape(idx.sizes().begin(), idx.sizes().end() - 1);
  for (int64_t s : rest) shape.push_back(s);
  return one(g.reshape(shape));
}

at::Tensor scatter_reduce(OpContext& c, at::Tensor out, int64_t axis, const at::Tensor& idx, const at::Tensor& upd) {
  const std::string red = c.attr_string("reduction", "none");
  if (red == "none") return out.scatter_(axis, idx, upd);
  if (red == "add") return out.scatter_add_(axis, idx, upd);
  const char* r = red == "mul" ? "prod" : red == "max" ? "amax" : red == "min" ? "amin" : nullptr;
  if (!r) c.fail(fmt::format("reduction '{}' is not none, add, mul, max or min", red));
  return out.scatter_reduce_(axis, idx, upd, r, /*include_self=*/true);
}

Ts op_scatter_elements(OpContext& c) {
  const at::Tensor &x = c.required(0), &idx = c.required(1), &upd = c.required(2);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  return one(scatter_reduce(c, x.clone(), axis, wrap_indices(idx, x.size(axis)), upd));
}

Ts op_scatter_nd(OpContext& c) {
  const at::Tensor &x = c.required(0), &idx_in = c.required(1), &upd = c.required(2);
  const at::Tensor idx = idx_in.to(at::kLong);
  const int64_t k = idx.size(-1);
  if (k > x.dim()) c.fail(fmt::format("index depth {} is over the data's rank {}", k, x.dim()));
  std::vector<int64_t> rest(x.sizes().begin() + k, x.sizes().end());
  int64_t rest_n = 1;
  for (int64_t s : rest) rest_n *= s;
  at::Tensor lin = at::zeros(idx.sizes().slice(0, idx.dim() - 1), at::kLong);
  for (int64_t j = 0; j < k; ++j) {
    at::Tensor ij = idx.select(-1, j);
    ij = at::where(ij < 0, ij + x.size(j), ij);
    lin = lin * x.size(j) + ij;
  }
  at::Tensor out = x.clone().reshape({-1, rest_n});
  const at::Tensor l = lin.reshape({-1, 1}).expand({lin.numel(), rest_n});
  const at::Tensor u = upd.reshape({-1, rest_n}).to(x.scalar_type());
  out = scatter_reduce(c, out, 0, l, u);
  return one(out.reshape(x.sizes()));
}

Ts op_slice(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const bool attrs = c.opset() < 10;  // starts, ends and axes were attributes
  const std::vector<int64_t> starts = attrs ? c.attr_ints("starts") : to_ints(c.required(1));
  const std::vector<int64_t> ends = attrs ? c.attr_ints("ends") : to_ints(c.required(2));
  std::vector<int64_t> axes, steps;
  if (attrs && c.has("axes")) axes = c.attr_ints("axes");
  else if (!attrs && c.input(3).defined()) axes = to_ints(c.input(3));
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (!attrs && c.input(4).defined()) steps = to_ints(c.input(4));
  else steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps differ in length");
  at::Tensor y = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = norm_axis(c, axes[i], x.dim());
    const int64_t dim = x.size(axis), step = steps[i];
    if (step == 0) c.fail("a step of 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = clamp_index(s, 0, dim);
      e = clamp_index(e, 0, dim);
      y = e > s ? y.slice(axis, s, e, step) : y.slice(axis, 0, 0);
    } else {
      s = clamp_index(s, 0, dim - 1);
      e = clamp_index(e, -1, dim - 1);
      if (s <= e) {
        y = y.slice(axis, 0, 0);
        continue;
      }
      // Walk backwards: flip, then a positive step from the mirrored start.
      const at::Tensor f = y.flip({axis});
      const int64_t fs = dim - 1 - s, fe = dim - 1 - e;
      y = f.slice(axis, fs, fe, step < -dim ? dim : -step);  // any step past -dim takes one element
    }
  }
  return one(y);
}

Ts op_split(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  std::vector<int64_t> sizes;
  if (c.input(1).defined()) sizes = to_ints(c.input(1));
  else if (c.has("split")) sizes = c.attr_ints("split");
  const int64_t dim = x.size(axis);
  if (sizes.empty()) {
    const int64_t n = c.has("num_outputs") ? c.attr_int("num_outputs", 1) : c.num_outputs();
    if (n <= 0 || n > c.num_outputs()) c.fail(fmt::format("{} parts for {} outputs", n, c.num_outputs()));
    const int64_t chunk = (dim + n - 1) / n;
    for (int64_t i = 0, left = dim; i < n; ++i, left -= chunk) sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim) c.fail(fmt::format("split size {} for a dimension of {}", s, dim));
    total += s;
  }
  if (total != dim) c.fail(fmt::format("split sizes [{}] do not add up to {}", fmt::join(sizes, ", "), dim));
  Ts out;
  int64_t at_ = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(axis, at_, s));
    at_ += s;
  }
  return out;
}

Ts op_concat(OpContext& c) {
  if (c.num_inputs() == 0) c.fail("needs at least one input");
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), c.required(0).dim());
  std::vector<at::Tensor> xs;
  int64_t total = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    xs.push_back(c.required(i));
    total += xs.back().numel();
    if (total > c.max_elements()) c.fail(fmt::format("the inputs hold over the {} elements a node may make", c.max_elements()));
  }
  return one(at::cat(xs, axis));
}

Ts op_reshape(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> shape = to_ints(c.required(1));
  const bool allowzero = c.attr_int("allowzero", 0) != 0;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 0 && !allowzero) {
      if (static_cast<int64_t>(i) >= x.dim()) c.fail("a 0 in the shape past the input's rank");
      shape[i] = x.size(static_cast<int64_t>(i));
    }
  return one(x.reshape(shape));
}

Ts op_flatten(OpContext& c) {
  const at::Tensor& x = c.required(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis > x.dim()) c.fail(fmt::format("axis {} is out of range for rank {}", c.attr_int("axis", 1), x.dim()));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  return one(x.reshape({outer, outer == 0 ? 0 : x.numel() / std::max<int64_t>(outer, 1)}));
}

Ts op_transpose(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
  return one(x.permute(perm));
}

std::vector<int64_t> axes_of(OpContext& c, size_t input, int64_t rank) {
  std::vector<int64_t> axes = c.input(input).defined() ? to_ints(c.input(input)) : c.attr_ints("axes");
  for (auto& a : axes) a = norm_axis(c, a, rank);
  return axes;
}

Ts op_squeeze(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> axes = axes_of(c, 1, x.dim());
  if (axes.empty()) return one(x.squeeze());
  std::sort(axes.rbegin(), axes.rend());
  at::Tensor y = x;
  for (int64_t a : axes) {
    if (x.size(a) != 1) c.fail(fmt::format("cannot squeeze axis {} of size {}", a, x.size(a)));
    y = y.squeeze(a);
  }
  return one(y);
}

Ts op_unsqueeze(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> axes = c.input(1).defined() ? to_ints(c.input(1)) : c.attr_ints("axes");
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  for (auto& a : axes) a = norm_axis(c, a, rank);
  std::sort(axes.begin(), axes.end());
  at::Tensor y = x;
  for (int64_t a : axes) y = y.unsqueeze(a);
  return one(y);
}

Ts op_expand(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const std::vector<int64_t> shape = to_ints(c.required(1));
  // Bidirectional broadcast: the output is broadcast(x.shape, shape).
  const int64_t r = std::max<int64_t>(x.dim(), static_cast<int64_t>(shape.size()));
  std::vector<int64_t> out(r);
  for (int64_t i = 0; i < r; ++i) {
    const int64_t xi = i - (r - x.dim()), si = i - (r - static_cast<int64_t>(shape.size()));
    const int64_t a = xi >= 0 ? x.size(xi) : 1, b = si >= 0 ? shape[si] : 1;
    if (a != b && a != 1 && b != 1) c.fail(fmt::format("cannot broadcast [{}] to [{}]", fmt::join(x.sizes().vec(), ", "), fmt::join(shape, ", ")));
    out[i] = a == 1 ? b : a;
  }
  c.check_size(out, "the output");
  // A view (stride 0 along the broadcast axes): every op reads it as ATen broadcasting would, and
  // none writes into it (OpContext::overwritable refuses overlapping layouts), so no copy is made.
  return one(x.expand(out));
}

Ts op_tile(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const std::vector<int64_t> repeats = to_ints(c.required(1));
  if (static_cast<int64_t>(repeats.size()) != x.dim())
    c.fail(fmt::format("{} repeats for an input of rank {}", repeats.size(), x.dim()));
  std::vector<int64_t> out;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (repeats[d] < 0 || (repeats[d] > 1 && x.size(d) > c.max_elements() / repeats[d]))
      c.fail(fmt::format("repeats {} of a dimension of {}", repeats[d], x.size(d)));
    out.push_back(x.size(d) * repeats[d]);
  }
  c.check_size(out, "the output");
  return one(x.repeat(repeats));
}

Ts op_pad(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> pads = c.input(1).defined() ? to_ints(c.input(1)) : c.attr_ints("pads");
  const std::string mode = c.attr_string("mode", "constant");
  const at::Tensor value = c.opset() < 11 ? at::scalar_tensor(c.attr_float("value", 0.0f), at::kDouble) : c.input(2);
  std::vector<int64_t> axes;
  if (c.input(3).defined()) axes = axes_of(c, 3, x.dim());
  else for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  const int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * n) c.fail(fmt::format("{} pads for {} axes", pads.size(), n));
  std::vector<int64_t> begin(x.dim(), 0), end(x.dim(), 0), out_shape;
  for (int64_t p : pads)
    if (p < -c.max_elements() || p > c.max_elements()) c.fail(fmt::format("a pad of {}", p));
  for (int64_t i = 0; i < n; ++i) {
    begin[axes[i]] = pads[i];
    end[axes[i]] = pads[i + n];
  }
  for (int64_t d = 0; d < x.dim(); ++d) out_shape.push_back(x.size(d) + begin[d] + end[d]);
  c.check_size(out_shape, "the output");
  at::Tensor y = x;
  if (mode == "constant") {
    std::vector<int64_t> p;  // ATen: last dimension first, (begin, end) pairs
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      p.push_back(begin[d]);
      p.push_back(end[d]);
    }
    const double v = value.defined() && value.numel() ? value.reshape({-1})[0].item<double>() : 0.0;
    return one(at::constant_pad_nd(x, p, v));
  }
  // reflect / edge / wrap, one axis at a time, by index arithmetic (any rank, any dtype).
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!begin[d] && !end[d]) continue;
    const int64_t L = y.size(d);
    if (L == 0) c.fail(fmt::format("mode '{}' pads a dimension of size 0", mode));
    if (begin[d] < 0 || end[d] < 0) {
      y = y.narrow(d, -std::min<int64_t>(begin[d], 0), L + std::min<int64_t>(begin[d], 0) + std::min<int64_t>(end[d], 0));
      continue;
    }
    std::vector<int64_t> idx;
    for (int64_t i = -begin[d]; i < L + end[d]; ++i) {
      int64_t j = i;
      if (mode == "edge") j = clamp_index(i, 0, L - 1);
      else if (mode == "wrap") j = ((i % L) + L) % L;
      else if (mode == "reflect") {
        if (L == 1) j = 0;
        else {
          const int64_t period = 2 * (L - 1);
          j = ((i % period) + period) % period;
          if (j >= L) j = period - j;
        }
      } else c.fail(fmt::format("mode '{}' is not constant, reflect, edge or wrap", mode));
      idx.push_back(j);
    }
    y = y.index_select(d, long_tensor(idx));
  }
  return one(y);
}

Ts op_cast(OpContext& c) {
  const at::Tensor& x = c.required(0);
  return one(x.to(c.promote(onnx_dtype(c, c.attr_int("to", 0)))));
}

Ts op_cast_like(OpContext& c) { return one(c.required(0).to(c.required(1).scalar_type())); }

Ts op_constant(OpContext& c) {
  if (c.has("value")) return one(c.attr_tensor("value"));
  if (c.has("value_float")) return one(at::scalar_tensor(c.attr_float("value_float", 0), c.float_type()));
  if (c.has("value_floats")) {
    const auto v = c.attr_floats("value_floats");
    return one(at::tensor(std::vector<float>(v), at::kFloat).to(c.float_type()));
  }
  if (c.has("value_int")) return one(at::scalar_tensor(c.attr_int("value_int", 0), at::kLong));
  if (c.has("value_ints")) return one(long_tensor(c.attr_ints("value_ints")));
  c.fail("holds no value this reader reads (value, value_float(s), value_int(s))");
}

Ts op_constant_of_shape(OpContext& c) {
  const std::vector<int64_t> shape = to_ints(c.required(0));
  c.check_size(shape, "the output");
  at::Tensor v = c.attr_tensor("value");
  if (!v.defined()) v = at::zeros({1}, c.float_type());
  return one(at::full(shape, 0, v.options()).copy_(v.reshape({})));
}

Ts op_range(OpContext& c) {
  const at::Tensor &start = c.required(0), &limit = c.required(1), &delta = c.required(2);
  if (at::isFloatingType(start.scalar_type())) {
    const double s = start.item<double>(), l = limit.item<double>(), d = delta.item<double>();
    const double count = std::max(0.0, std::ceil((l - s) / d));
    if (!(count <= static_cast<double>(c.max_elements())))
      c.fail(fmt::format("start {}, limit {} and delta {} make over the {} elements a node may make", s, l, d,
                         c.max_elements()));
    const int64_t n = static_cast<int64_t>(count);
    return one((at::arange(n, at::TensorOptions().dtype(start.scalar_type())) * d + s).to(start.scalar_type()));
  }
  const int64_t s = start.item<int64_t>(), l = limit.item<int64_t>(), d = delta.item<int64_t>();
  if (d == 0) c.fail("delta 0");
  const __int128 count = (static_cast<__int128>(l) - s + d + (d > 0 ? -1 : 1)) / d;
  if (count > c.max_elements())
    c.fail(fmt::format("start {}, limit {} and delta {} make over the {} elements a node may make", s, l, d,
                       c.max_elements()));
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  return one((at::arange(n, at::kLong) * d + s).to(start.scalar_type()));
}

Ts op_trilu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t k = c.input(1).defined() ? c.input(1).item<int64_t>() : 0;
  return one(c.attr_int("upper", 1) ? at::triu(x, k) : at::tril(x, k));
}

Ts op_cumsum(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t axis = norm_axis(c, c.required(1).item<int64_t>(), x.dim());
  const bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  at::Tensor y = reverse ? x.flip({axis}) : x;
  at::Tensor s = at::cumsum(y, axis, y.scalar_type());
  if (exclusive) s = s - y;
  return one(reverse ? s.flip({axis}) : s);
}

Ts op_nonzero(OpContext& c) { return one(at::nonzero(c.required(0)).t().contiguous()); }

Ts op_one_hot(OpContext& c) {
  const at::Tensor &idx = c.required(0), &depth_t = c.required(1), &values = c.required(2);
  const double depth_value = depth_t.reshape({-1})[0].item<double>();
  if (!(depth_value >= 1 && depth_value <= static_cast<double>(c.max_elements())))
    c.fail(fmt::format("depth {} is not a positive count", depth_value));
  const int64_t depth = static_cast<int64_t>(depth_value);
  int64_t axis = c.attr_int("axis", -1);
  const int64_t r = idx.dim() + 1;
  axis = norm_axis(c, axis, r);
  std::vector<int64_t> out_shape = idx.sizes().vec();
  out_shape.push_back(depth);
  c.check_size(out_shape, "the output");
  at::Tensor i = idx.to(at::kLong);
  i = at::where(i < 0, i + depth, i);
  const at::Tensor in_range = at::logical_and(i >= 0, i < depth);
  at::Tensor oh = at::one_hot(at::where(in_range, i, at::zeros_like(i)), depth) * in_range.unsqueeze(-1);
  oh = oh.movedim(-1, axis);
  const at::Tensor v = values.reshape({-1});
  return one(at::where(oh.to(at::kBool), v[1], v[0]));
}

Ts op_arg(OpContext& c, bool max) {
  const at::Tensor& x = c.required(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", 0), x.dim());
  const bool keep = c.attr_int("keepdims", 1) != 0, last = c.attr_int("select_last_index", 0) != 0;
  at::Tensor y = last ? x.flip({axis}) : x;
  at::Tensor i = max ? at::argmax(y, axis, keep) : at::argmin(y, axis, keep);
  if (last) i = x.size(axis) - 1 - i;
  return one(i);
}
Ts op_argmax(OpContext& c) { return op_arg(c, true); }
Ts op_argmin(OpContext& c) { return op_arg(c, false); }

Ts op_eye_like(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const at::ScalarType t = c.has("dtype") ? c.promote(onnx_dtype(c, c.attr_int("dtype", 1))) : x.scalar_type();
  const int64_t k = c.attr_int("k", 0);
  at::Tensor e = at::zeros({x.size(0), x.size(1)}, t);
  if (k < x.size(1) && k > -x.size(0)) e.diagonal(k).fill_(1);
  return one(e);
}

Ts op_dropout(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const at::Tensor ratio = c.input(1), train = c.input(2);
  const bool training = train.defined() && train.item<bool>();
  const double p = ratio.defined() ? ratio.item<double>() : 0.5;
  if (!training || p == 0) return {x, at::ones(x.sizes(), at::kBool)};
  const at::Tensor keep = at::bernoulli(at::full(x.sizes(), 1 - p, x.options())).to(at::kBool);
  return {at::where(keep, x / (1 - p), at::zeros_like(x)), keep};
}

// The random ops draw from the global CPU generator, which the audit reseeds per pass as for
// dropout: a model that draws in eval mode is then refused as nondeterministic, as a TorchScript
// one is. A `seed` attribute is read but not followed: ONNX leaves the numbers to the runtime.
// RandomNormal(shape, dtype, mean, scale) / RandomUniform(shape, dtype, low, high), and the
// *Like forms that take the shape (and, without dtype, the type) of their input.
at::Tensor random_tensor(OpContext& c, bool like, bool normal) {
  std::vector<int64_t> shape;
  at::ScalarType type = at::kFloat;
  if (like) {
    const at::Tensor& x = c.required(0);
    shape = x.sizes().vec();
    type = c.has("dtype") ? onnx_dtype(c, c.attr_int("dtype", 1)) : x.scalar_type();
  } else {
    shape = c.attr_ints("shape");
    if (!c.has("shape")) c.fail("needs the attribute 'shape'");
    type = onnx_dtype(c, c.attr_int("dtype", 1));
  }
  if (!at::isFloatingType(type)) c.fail(fmt::format("draws {} numbers: only floating types", c10::toString(type)));
  c.check_size(shape, "the random tensor");
  const at::ScalarType out = c.promote(type);
  (void)c.attr_float("seed", 0);  // checked for its type only
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(out));
  if (normal) t.normal_(c.attr_float("mean", 0), c.attr_float("scale", 1));
  else t.uniform_(c.attr_float("low", 0), c.attr_float("high", 1));
  return t;
}

Ts op_random_normal(OpContext& c) { return {random_tensor(c, false, true)}; }
Ts op_random_uniform(OpContext& c) { return {random_tensor(c, false, false)}; }
Ts op_random_normal_like(OpContext& c) { return {random_tensor(c, true, true)}; }
Ts op_random_uniform_like(OpContext& c) { return {random_tensor(c, true, false)}; }

Ts op_bernoulli(OpContext& c) {
  const at::Tensor& p = c.required(0);
  if (!at::isFloatingType(p.scalar_type())) c.fail("the probabilities are not floating-point");
  const at::ScalarType type = c.has("dtype") ? onnx_dtype(c, c.attr_int("dtype", 1)) : p.scalar_type();
  (void)c.attr_float("seed", 0);
  return {at::bernoulli(p).to(c.promote(type))};
}

Ts op_topk(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t k = c.opset() < 10 ? c.attr_int("k", 0) : c.required(1).reshape({-1})[0].item<int64_t>();
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  const bool largest = c.attr_int("largest", 1) != 0, sorted = c.attr_int("sorted", 1) != 0;
  auto [v, i] = at::topk(x, k, axis, largest, sorted);
  return {v, i};
}

}  // namespace

void add_tensor_ops(OpTable& t) {
  t["Shape"] = op_shape; t["Size"] = op_size; t["Gather"] = op_gather; t["GatherElements"] = op_gather_elements;
  t["GatherND"] = op_gather_nd; t["ScatterND"] = op_scatter_nd; t["ScatterElements"] = op_scatter_elements;
  t["Slice"] = op_slice; t["Split"] = op_split; t["Concat"] = op_concat; t["Reshape"] = op_reshape;
  t["Flatten"] = op_flatten; t["Transpose"] = op_transpose; t["Squeeze"] = op_squeeze; t["Unsqueeze"] = op_unsqueeze;
  t["Expand"] = op_expand; t["Tile"] = op_tile; t["Pad"] = op_pad; t["Cast"] = op_cast; t["CastLike"] = op_cast_like;
  t["Constant"] = op_constant; t["ConstantOfShape"] = op_constant_of_shape; t["Range"] = op_range;
  t["Trilu"] = op_trilu; t["CumSum"] = op_cumsum; t["NonZero"] = op_nonzero; t["OneHot"] = op_one_hot;
  t["ArgMax"] = op_argmax; t["ArgMin"] = op_argmin; t["EyeLike"] = op_eye_like; t["Dropout"] = op_dropout;
  t["TopK"] = op_topk; t["RandomNormal"] = op_random_normal; t["RandomUniform"] = op_random_uniform;
  t["RandomNormalLike"] = op_random_normal_like; t["RandomUniformLike"] = op_random_uniform_like;
  t["Bernoulli"] = op_bernoulli;
}

}  // namespace grassaudit::onnx_rt
