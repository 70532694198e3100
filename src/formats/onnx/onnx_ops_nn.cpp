#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>
#include <numeric>

#include "formats/onnx/onnx_op.h"

// Matrix products, convolutions, normalisations, softmax and reductions.
namespace grassaudit::onnx_rt {

namespace {

// fail() when the product of a [..., N, K] and b [..., K, M] (numpy's matmul, batch dimensions
// broadcast), with `bias` (if defined) broadcast onto it, would be over the limit; shapes ATen
// refuses are left to it.
void check_product(const OpContext& c, const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias = {}) {
  if (a.dim() == 0 || b.dim() == 0) return;
  const auto batch = broadcast_shape({a.sizes().slice(0, std::max<int64_t>(a.dim() - 2, 0)),
                                      b.sizes().slice(0, std::max<int64_t>(b.dim() - 2, 0))});
  if (!batch) return;
  std::vector<int64_t> out = *batch;
  if (a.dim() >= 2) out.push_back(a.size(-2));
  if (b.dim() >= 2) out.push_back(b.size(-1));
  c.check_size(out, "the product");
  if (bias.defined())
    if (const auto with_bias = broadcast_shape({out, bias.sizes()})) c.check_size(*with_bias, "the output");
}

Ts op_matmul(OpContext& c) {
  check_product(c, c.required(0), c.required(1));
  return one(at::matmul(c.required(0), c.required(1)));
}

bool blas_float(at::ScalarType t) { return t == at::kFloat || t == at::kDouble; }

// The interpreter's MatMul+Add fusion: A [..., M, K] @ B [K, N] + bias [N] as one addmm on A seen
// as [rows, K] (the bias written into the output, the product accumulated onto it), which is
// what at::matmul does for these shapes less the second pass; other shapes and types run as the
// two ops would.
Ts op_matmul_add(OpContext& c) {
  const at::Tensor &a = c.required(0), &b = c.required(1), &bias = c.required(2);
  check_product(c, a, b, bias);
  const auto t = a.scalar_type();
  if (a.dim() >= 2 && b.dim() == 2 && bias.dim() == 1 && bias.size(0) == b.size(1) && a.size(-1) == b.size(0) &&
      blas_float(t) && b.scalar_type() == t && bias.scalar_type() == t) {
    std::vector<int64_t> out(a.sizes().begin(), a.sizes().end());
    out.back() = b.size(1);
    return one(at::addmm(bias, a.reshape({-1, a.size(-1)}), b).view(out));
  }
  return one(at::add(at::matmul(a, b), bias));
}

Ts op_gemm(OpContext& c) {
  // A [M, K] (or [K, M] with transA), B [K, N] (or [N, K]), C broadcast to [M, N]
  at::Tensor a = c.required(0), b = c.required(1);
  if (c.attr_int("transA", 0)) a = a.t();
  if (c.attr_int("transB", 0)) b = b.t();
  const double alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
  const at::Tensor bias = c.input(2);
  check_product(c, a, b, bias);
  const auto t = a.scalar_type();
  // One addmm when the types allow it: C broadcast into the output, then alpha * A @ B onto it.
  if (bias.defined() && a.dim() == 2 && b.dim() == 2 && bias.dim() <= 2 && blas_float(t) && b.scalar_type() == t &&
      bias.scalar_type() == t)
    return one(at::addmm(bias, a, b, beta, alpha));
  at::Tensor y = at::matmul(a, b);
  if (alpha != 1.0) y = y * alpha;
  if (c.input(2).defined() && beta != 0.0) y = y + (beta == 1.0 ? c.input(2) : c.input(2) * beta);
  return one(y.to(a.scalar_type()));
}

Ts op_einsum(OpContext& c) {
  std::vector<at::Tensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.required(i));
  std::string eq = c.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  return one(at::einsum(eq, xs));
}

// Convolution geometry: kernel, strides, dilations, and explicit begin/end pads from pads or
// auto_pad (SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning).
struct ConvGeometry {
  std::vector<int64_t> stride, dilation, begin, end;
};
// Strides and dilations past this are refused (no model steps further), so the geometry's
// arithmetic stays far from overflowing.
constexpr int64_t kMaxStride = int64_t{1} << 20;

ConvGeometry conv_geometry(OpContext& c, const at::Tensor& x, const std::vector<int64_t>& kernel, bool transposed) {
  const size_t n = kernel.size();
  ConvGeometry g;
  g.stride = c.attr_ints("strides");
  g.dilation = c.attr_ints("dilations");
  if (g.stride.empty()) g.stride.assign(n, 1);
  if (g.dilation.empty()) g.dilation.assign(n, 1);
  const std::vector<int64_t> pads = c.attr_ints("pads");
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  g.begin.assign(n, 0);
  g.end.assign(n, 0);
  if (g.stride.size() != n || g.dilation.size() != n) c.fail("strides or dilations do not match the kernel's rank");
  for (size_t i = 0; i < n; ++i)
    if (g.stride[i] < 1 || g.stride[i] > kMaxStride || g.dilation[i] < 1 || g.dilation[i] > kMaxStride)
      c.fail(fmt::format("strides [{}] and dilations [{}] must be between 1 and {}", fmt::join(g.stride, ", "),
                         fmt::join(g.dilation, ", "), kMaxStride));
  for (int64_t p : pads)
    if (p < -c.max_elements() || p > c.max_elements()) c.fail(fmt::format("a pad of {}", p));
  if (auto_pad == "NOTSET") {
    if (!pads.empty()) {
      if (pads.size() != 2 * n) c.fail(fmt::format("{} pads for a {}-D kernel", pads.size(), n));
      for (size_t i = 0; i < n; ++i) {
        g.begin[i] = pads[i];
        g.end[i] = pads[i + n];
      }
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = x.size(2 + i);
      int64_t total;
      if (transposed) {
        total = std::max<int64_t>(0, g.stride[i] * (in - 1) + ((kernel[i] - 1) * g.dilation[i] + 1) - in * g.stride[i]);
      } else {
        const int64_t out = (in + g.stride[i] - 1) / g.stride[i];
        total = std::max<int64_t>(0, (out - 1) * g.stride[i] + (kernel[i] - 1) * g.dilation[i] + 1 - in);
      }
      const int64_t small = total / 2, big = total - small;
      g.begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      g.end[i] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "VALID") {
    c.fail(fmt::format("auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad));
  }
  return g;
}

Ts op_conv(OpContext& c) {
  // X [N, C, spatial...], W [M, C/group, kernel...], B [M]
  const at::Tensor &x = c.required(0), &w = c.required(1);
  const at::Tensor b = c.input(2);
  if (w.dim() < 3 || w.dim() > 5) c.fail(fmt::format("a weight of rank {} (a 1-D to 3-D convolution)", w.dim()));
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  const ConvGeometry g = conv_geometry(c, x, kernel, false);
  const int64_t groups = c.attr_int("group", 1);
  bool symmetric = true;
  for (size_t i = 0; i < kernel.size(); ++i) symmetric = symmetric && g.begin[i] == g.end[i];
  // Output [N, M, spatial...]: refused before it is allocated when over the limit.
  std::vector<int64_t> out_shape{x.size(0), w.size(0)};
  for (size_t i = 0; i < kernel.size(); ++i)
    out_shape.push_back((x.size(2 + i) + g.begin[i] + g.end[i] - g.dilation[i] * (kernel[i] - 1) - 1) / g.stride[i] + 1);
  c.check_size(out_shape, "the output");
  at::Tensor in = x;
  std::vector<int64_t> padding(kernel.size(), 0);
  if (symmetric) padding = g.begin;
  else {
    std::vector<int64_t> p;
    for (size_t i = kernel.size(); i-- > 0;) {
      p.push_back(g.begin[i]);
      p.push_back(g.end[i]);
    }
    in = at::constant_pad_nd(x, p, 0);
  }
  return one(at::convolution(in, w, b, g.stride, padding, g.dilation, false, std::vector<int64_t>(kernel.size(), 0), groups));
}

Ts op_conv_transpose(OpContext& c) {
  // X [N, C, spatial...], W [C, M/group, kernel...], B [M]
  const at::Tensor &x = c.required(0), &w = c.required(1);
  const at::Tensor b = c.input(2);
  if (w.dim() < 3 || w.dim() > 5)
    c.fail(fmt::format("a weight of rank {} (a 1-D to 3-D transposed convolution)", w.dim()));
  std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end());
  const size_t n = kernel.size();
  ConvGeometry g = conv_geometry(c, x, kernel, true);
  const int64_t groups = c.attr_int("group", 1);
  if (groups < 1 || w.size(1) > c.max_elements() / groups) c.fail(fmt::format("group {}", groups));
  std::vector<int64_t> out_pad = c.attr_ints("output_padding");
  if (out_pad.empty()) out_pad.assign(n, 0);
  const std::vector<int64_t> out_shape = c.attr_ints("output_shape");
  if (out_pad.size() != n || (!out_shape.empty() && out_shape.size() < n))
    c.fail("output_padding or output_shape does not match the kernel's rank");
  for (int64_t v : out_pad)
    if (v < 0 || v > kMaxStride) c.fail(fmt::format("output_padding {}", v));
  for (int64_t v : out_shape)
    if (v < 0 || v > c.max_elements()) c.fail(fmt::format("output_shape {}", v));
  if (!out_shape.empty()) {
    // total padding from the requested output size; the odd unit at the end unless SAME_LOWER
    const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
    for (size_t i = 0; i < n; ++i) {
      const int64_t want = out_shape[out_shape.size() - n + i];
      const int64_t total = g.stride[i] * (x.size(2 + i) - 1) + out_pad[i] + ((kernel[i] - 1) * g.dilation[i] + 1) - want;
      const int64_t small = total / 2, big = total - small;
      g.begin[i] = auto_pad == "SAME_LOWER" ? big : small;
      g.end[i] = auto_pad == "SAME_LOWER" ? small : big;
    }
  }
  // Full transposed convolution with no padding, then crop begin/end (negative: pad); both
  // refused before they are allocated when over the limit.
  std::vector<int64_t> full_shape{x.size(0), w.size(1) * groups}, cropped_shape;
  for (size_t i = 0; i < n; ++i) full_shape.push_back(g.stride[i] * (x.size(2 + i) - 1) + (kernel[i] - 1) * g.dilation[i] + 1);
  c.check_size(full_shape, "the full output");
  cropped_shape = full_shape;
  for (size_t i = 0; i < n; ++i) cropped_shape[2 + i] += out_pad[i] - g.begin[i] - g.end[i];
  c.check_size(cropped_shape, "the output");
  at::Tensor y = at::convolution(x, w, b, g.stride, std::vector<int64_t>(n, 0), g.dilation, true,
                                 std::vector<int64_t>(n, 0), groups);
  std::vector<int64_t> p;
  for (size_t i = n; i-- > 0;) {
    p.push_back(-g.begin[i]);
    p.push_back(-g.end[i] + out_pad[i]);
  }
  y = at::constant_pad_nd(y, p, 0);
  if (b.defined()) {
    // output_padding cells past the full convolution still get the bias
    bool extra = false;
    for (int64_t o : out_pad) extra = extra || o > 0;
    if (extra) {
      std::vector<int64_t> bshape(y.dim(), 1);
      bshape[1] = b.size(0);
      at::Tensor full = at::convolution(x, w, {}, g.stride, std::vector<int64_t>(n, 0), g.dilation, true,
                                        std::vector<int64_t>(n, 0), groups);
      full = at::constant_pad_nd(full, p, 0);
      y = full + b.reshape(bshape);
    }
  }
  return one(y);
}

// Before opset 13 the input is seen as 2-D, [prod(dims before axis), prod(dims from axis)], and
// the softmax runs over the second dimension (axis defaults to 1).
at::Tensor coerced(OpContext& c, const at::Tensor& x, int64_t* axis) {
  if (c.opset() >= 13) {
    *axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
    return x;
  }
  const int64_t a = norm_axis(c, c.attr_int("axis", 1), std::max<int64_t>(x.dim(), 1));
  int64_t outer = 1;
  for (int64_t d = 0; d < a; ++d) outer *= x.size(d);
  *axis = 1;
  return x.reshape({outer, -1});
}

// MaxPool / AveragePool, 1-D to 3-D: X [N, C, spatial...]. ONNX's pads may differ at the two
// ends, so the input is padded explicitly (-inf for max, 0 for average) and ATen pools unpadded;
// count_include_pad=0 divides by the pooled count of real cells (a padded mask of ones).
Ts pool(OpContext& c, bool max) {
  const at::Tensor& x = c.required(0);
  const std::vector<int64_t> kernel = c.attr_ints("kernel_shape");
  const size_t n = kernel.size();
  if (n == 0 || n > 3 || static_cast<int64_t>(n) != x.dim() - 2)
    c.fail(fmt::format("kernel_shape of {} dimensions for an input of rank {}", n, x.dim()));
  for (int64_t k : kernel)
    if (k < 1 || k > kMaxStride) c.fail(fmt::format("kernel_shape [{}] must be between 1 and {}", fmt::join(kernel, ", "), kMaxStride));
  ConvGeometry g = conv_geometry(c, x, kernel, false);
  // The padded input (and the dilated path's kernel of ones) refused before they are allocated.
  std::vector<int64_t> padded_shape{x.size(0), x.size(1)}, kernel_shape{1, 1};
  for (size_t i = 0; i < n; ++i) padded_shape.push_back(x.size(2 + i) + g.begin[i] + g.end[i]);
  kernel_shape.insert(kernel_shape.end(), kernel.begin(), kernel.end());
  c.check_size(padded_shape, "the padded input");
  c.check_size(kernel_shape, "the window");
  bool dilated = false;
  for (int64_t d : g.dilation) dilated = dilated || d != 1;
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  std::vector<int64_t> p;
  bool padded = false;
  for (size_t i = n; i-- > 0;) {
    p.push_back(g.begin[i]);
    p.push_back(g.end[i]);
    padded = padded || g.begin[i] || g.end[i];
  }
  const std::vector<int64_t> zero(n, 0);
  if (max) {
    // Integers pool as float64 (exact for every int32 and uint8 value) and come back.
    const at::Tensor xf = at::isFloatingType(x.scalar_type()) ? x : x.to(at::kDouble);
    const at::Tensor in = padded ? at::constant_pad_nd(xf, p, -INFINITY) : xf;
    if (c.num_outputs() < 2) {
      at::Tensor y = n == 1   ? at::max_pool1d(in, kernel, g.stride, zero, g.dilation, ceil_mode)
                     : n == 2 ? at::max_pool2d(in, kernel, g.stride, zero, g.dilation, ceil_mode)
                              : at::max_pool3d(in, kernel, g.stride, zero, g.dilation, ceil_mode);
      return one(y.to(x.scalar_type()));
    }
    // Indices: ONNX counts into the whole unpadded tensor, row-major (storage_order 0) or
    // column-major over the spatial dimensions (1); ATen counts into each padded plane.
    if (n != 2) c.fail("the Indices output is computed for 2-D pooling only");
    auto [y, idx] = at::max_pool2d_with_indices(in, kernel, g.stride, zero, g.dilation, ceil_mode);
    const int64_t Wp = in.size(3), H = x.size(2), W = x.size(3);
    const at::Tensor h = at::div(idx, Wp, "floor") - g.begin[0], w = at::remainder(idx, Wp) - g.begin[1];
    at::Tensor flat = c.attr_int("storage_order", 0) ? w * H + h : h * W + w;
    const at::Tensor plane = at::arange(x.size(0) * x.size(1), at::kLong).reshape({x.size(0), x.size(1), 1, 1}) * (H * W);
    return {y.to(x.scalar_type()), flat + plane};
  }
  if (dilated) {
    // Dilated averages (opset 19): window sums as a convolution of ones over [N*C, 1, ...], each
    // divided by the count of the window's cells in the padded input (count_include_pad) or in
    // the real one; ceil_mode's last windows reach past the end, over cells that count as neither.
    const at::Tensor xf = x.reshape([&] {
      std::vector<int64_t> sh{x.size(0) * x.size(1), 1};
      for (size_t i = 0; i < n; ++i) sh.push_back(x.size(2 + i));
      return sh;
    }());
    std::vector<int64_t> pe = p, mshape(n + 2, 1);
    for (size_t i = 0; i < n; ++i) {
      mshape[2 + i] = x.size(2 + i);
      if (!ceil_mode) continue;
      const int64_t in_p = x.size(2 + i) + g.begin[i] + g.end[i], dk = (kernel[i] - 1) * g.dilation[i] + 1;
      int64_t out = (in_p - dk + g.stride[i] - 1) / g.stride[i] + 1;
      if ((out - 1) * g.stride[i] >= x.size(2 + i) + g.begin[i]) --out;  // a window must start inside
      const int64_t extra = std::max<int64_t>(0, (out - 1) * g.stride[i] + dk - in_p);
      pe[2 * (n - 1 - i) + 1] += extra;
    }
    const at::Tensor w = at::ones([&] {
      std::vector<int64_t> sh{1, 1};
      sh.insert(sh.end(), kernel.begin(), kernel.end());
      return sh;
    }(), x.options());
    auto sum = [&](const at::Tensor& t) {
      return at::convolution(t, w, {}, g.stride, zero, g.dilation, false, zero, 1);
    };
    const at::Tensor total = sum(at::constant_pad_nd(xf, pe, 0));
    const at::Tensor real = at::constant_pad_nd(at::ones(mshape, x.options()), pe, 0);
    at::Tensor count;
    if (c.attr_int("count_include_pad", 0)) {
      // ONNX's reference divides every window by the kernel's size, ceil_mode's last ones included
      int64_t cells = 1;
      for (int64_t k : kernel) cells *= k;
      count = at::full({}, static_cast<double>(cells), x.options());
    } else {
      count = sum(real);
    }
    std::vector<int64_t> out_shape{x.size(0), x.size(1)};
    for (size_t i = 0; i < n; ++i) out_shape.push_back(total.size(2 + i));
    return one((total / count).reshape(out_shape));
  }
  auto avg = [&](const at::Tensor& t) {
    if (n == 1) return at::avg_pool1d(t, kernel, g.stride, zero, ceil_mode, true);
    if (n == 2) return at::avg_pool2d(t, kernel, g.stride, zero, ceil_mode, true);
    return at::avg_pool3d(t, kernel, g.stride, zero, ceil_mode, true);
  };
  const at::Tensor in = padded ? at::constant_pad_nd(x, p, 0) : x;
  at::Tensor y = avg(in);
  if (padded && !c.attr_int("count_include_pad", 0)) {
    std::vector<int64_t> mshape(x.dim(), 1);
    for (size_t i = 0; i < n; ++i) mshape[2 + i] = x.size(2 + i);
    y = y / avg(at::constant_pad_nd(at::ones(mshape, x.options()), p, 0));
  }
  return one(y);
}
Ts op_max_pool(OpContext& c) { return pool(c, true); }
Ts op_average_pool(OpContext& c) { return pool(c, false); }

Ts softmax_like(OpContext& c, bool log) {
  const at::Tensor& x = c.required(0);
  int64_t axis = 0;
  const at::Tensor y = coerced(c, x, &axis);
  return one((log ? at::log_softmax(y, axis) : at::softmax(y, axis)).reshape(x.sizes()));
}
Ts op_softmax(OpContext& c) { return softmax_like(c, false); }
Ts op_log_softmax(OpContext& c) { return softmax_like(c, true); }

Ts op_hardmax(OpContext& c) {
  const at::Tensor& x = c.required(0);
  int64_t axis = 0;
  const at::Tensor y = coerced(c, x, &axis);
  return one(at::one_hot(at::argmax(y, axis), y.size(axis)).movedim(-1, axis).to(x.scalar_type()).reshape(x.sizes()));
}

Ts op_layer_norm(OpContext& c) {
  // X [..., normalised dims from axis], Scale and B broadcast over them
  const at::Tensor& x = c.required(0);
  const at::Tensor& scale = c.required(1);
  const at::Tensor bias = c.input(2);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  const double eps = c.attr_float("epsilon", 1e-5f);
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < x.dim(); ++d) dims.push_back(d);
  // float32 and float64 inputs: ATen's own kernel, which computes in the input's type (the
  // stash type float32, or wider) and returns the same Mean and InvStdDev ([..., 1, ...]) ONNX does.
  const bool plain_scale = axis < x.dim() && scale.sizes() == x.sizes().slice(axis) && (!bias.defined() || bias.sizes() == scale.sizes());
  if (blas_float(x.scalar_type()) && plain_scale && scale.scalar_type() == x.scalar_type() &&
      (!bias.defined() || bias.scalar_type() == x.scalar_type())) {
    auto [y, mean, inv] = at::native_layer_norm(x, x.sizes().slice(axis), scale, bias, eps);
    return {y, mean, inv};
  }
  const at::Tensor xs = x.scalar_type() == at::kDouble ? x : x.to(at::kFloat);  // stash_type float32 or wider
  const at::Tensor mean = xs.mean(dims, true);
  const at::Tensor var = (xs - mean).pow(2).mean(dims, true);
  const at::Tensor inv = at::rsqrt(var + eps);
  at::Tensor y = ((xs - mean) * inv).to(x.scalar_type()) * scale;
  if (bias.defined()) y = y + bias;
  return {y, mean, inv};
}

Ts op_batch_norm(OpContext& c) {
  // X [N, C, ...]; scale, B, mean, var [C]
  const at::Tensor& x = c.required(0);
  const at::Tensor &scale = c.required(1), &bias = c.required(2), &mean = c.required(3), &var = c.required(4);
  const double eps = c.attr_float("epsilon", 1e-5f), momentum = c.attr_float("momentum", 0.9f);
  if (c.opset() < 9 && c.attr_int("spatial", 1) == 0) c.fail("spatial=0 (statistics per position) is not read");
  std::vector<int64_t> shape(x.dim(), 1);
  if (x.dim() >= 2) shape[1] = x.size(1);
  if (c.attr_int("training_mode", 0)) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != 1) dims.push_back(d);
    const at::Tensor m = x.mean(dims), v = x.var(dims, /*unbiased=*/false);
    const at::Tensor y = (x - m.reshape(shape)) * at::rsqrt(v.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape);
    return {y, mean * momentum + m * (1 - momentum), var * momentum + v * (1 - momentum)};
  }
  const at::Tensor y = (x - mean.reshape(shape)) * at::rsqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape);
  return one(y);
}

Ts op_instance_norm(OpContext& c) {
  const at::Tensor &x = c.required(0), &scale = c.required(1), &bias = c.required(2);
  const double eps = c.attr_float("epsilon", 1e-5f);
  std::vector<int64_t> dims, shape(x.dim(), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  shape[1] = x.size(1);
  const at::Tensor m = x.mean(dims, true), v = (x - m).pow(2).mean(dims, true);
  return one((x - m) * at::rsqrt(v + eps) * scale.reshape(shape) + bias.reshape(shape));
}

Ts op_group_norm(OpContext& c) {
  // X [N, C, ...] in num_groups groups of C / num_groups channels; scale and bias [C] (opset 21)
  // or [num_groups] (opset 18, one per group)
  const at::Tensor &x = c.required(0), &scale = c.required(1), &bias = c.required(2);
  const int64_t groups = c.attr_int("num_groups", 0);
  if (groups <= 0 || x.dim() < 2 || x.size(1) % groups) c.fail(fmt::format("num_groups {} does not divide the channels", groups));
  for (const at::Tensor* t : {&scale, &bias})
    if (t->numel() != x.size(1) && t->numel() != groups)
      c.fail(fmt::format("scale and bias hold {} and {} values, not one per channel or group", scale.numel(), bias.numel()));
  const double eps = c.attr_float("epsilon", 1e-5f);
  const int64_t N = x.size(0), C = x.size(1);
  const at::Tensor xs = x.scalar_type() == at::kDouble ? x : x.to(at::kFloat);
  const at::Tensor g = xs.reshape({N, groups, -1});
  const at::Tensor mean = g.mean({2}, true), var = (g - mean).pow(2).mean({2}, true);
  at::Tensor y = ((g - mean) * at::rsqrt(var + eps)).reshape(x.sizes()).to(x.scalar_type());
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = C;
  auto per_channel = [&](const at::Tensor& t) {
    return t.numel() == C ? t.reshape(shape) : t.repeat_interleave(C / groups).reshape(shape);
  };
  return one(y * per_channel(scale) + per_channel(bias));
}

Ts op_mean_variance_norm(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> axes = c.attr_ints("axes");
  if (axes.empty()) axes = {0, 2, 3};
  for (auto& a : axes) a = norm_axis(c, a, x.dim());
  const at::Tensor m = x.mean(axes, true);
  const at::Tensor sd = (x - m).pow(2).mean(axes, true).sqrt();
  return one((x - m) / (sd + 1e-9));
}

Ts op_lp_norm(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const int64_t axis = norm_axis(c, c.attr_int("axis", -1), x.dim());
  const int64_t p = c.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail(fmt::format("p {} is not 1 or 2", p));
  const at::Tensor norm = p == 1 ? x.abs().sum(axis, true) : x.pow(2).sum(axis, true).sqrt();
  return one(x / norm);
}

Ts op_global_average_pool(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return one(x.mean(dims, true));
}

Ts op_global_max_pool(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return one(x.amax(dims, true));
}

// Reductions: axes from the input (opset 18 on, and ReduceSum from 13) or the attribute; none
// given: every axis, unless noop_with_empty_axes.
template <int Kind>
Ts reduce(OpContext& c) {
  const at::Tensor& x = c.required(0);
  std::vector<int64_t> axes = c.input(1).defined() ? to_ints(c.input(1)) : c.attr_ints("axes");
  const bool keep = c.attr_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (c.attr_int("noop_with_empty_axes", 0)) return one(x);
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  }
  for (auto& a : axes) a = norm_axis(c, a, x.dim());
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (x.dim() == 0) return one(x);
  switch (Kind) {
    case 0: return one(x.sum(axes, keep).to(x.scalar_type()));
    case 1: return one(x.mean(axes, keep));
    case 2:
    case 3: {
      if (x.numel()) return one(Kind == 2 ? x.amax(axes, keep) : x.amin(axes, keep));
      // The max of an empty set is -inf (the min +inf), as ONNX says; ATen refuses it.
      std::vector<int64_t> shape;
      for (int64_t d = 0; d < x.dim(); ++d) {
        const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
        if (!reduced) shape.push_back(x.size(d));
        else if (keep) shape.push_back(1);
      }
      const bool flt = at::isFloatingType(x.scalar_type());
      if (Kind == 2)
        return one(flt ? at::full(shape, -INFINITY, x.options()) : at::full(shape, 0, x.options()).fill_(c10::Scalar(std::numeric_limits<int64_t>::min())).to(x.scalar_type()));
      return one(flt ? at::full(shape, INFINITY, x.options()) : at::full(shape, 0, x.options()));
    }
    case 4: {
      at::Tensor y = x;
      for (auto it = axes.rbegin(); it != axes.rend(); ++it) y = y.prod(*it, keep);
      return one(y);
    }
    case 5: return one(x.abs().sum(axes, keep).to(x.scalar_type()));
    case 6: return one(x.to(at::isFloatingType(x.scalar_type()) ? x.scalar_type() : at::kDouble).pow(2).sum(axes, keep).sqrt().to(x.scalar_type()));
    case 7: return one(x.sum(axes, keep).log());
    case 8: return one(at::logsumexp(x, axes, keep));
    case 9: return one((x * x).sum(axes, keep).to(x.scalar_type()));
  }
  return one(x);
}

}  // namespace

OpFn matmul_add_fn() { return op_matmul_add; }

void add_nn_ops(OpTable& t) {
  t["MatMul"] = op_matmul; t["Gemm"] = op_gemm; t["Einsum"] = op_einsum; t["Conv"] = op_conv;
  t["ConvTranspose"] = op_conv_transpose; t["Softmax"] = op_softmax; t["LogSoftmax"] = op_log_softmax;
  t["Hardmax"] = op_hardmax; t["LayerNormalization"] = op_layer_norm; t["BatchNormalization"] = op_batch_norm;
  t["InstanceNormalization"] = op_instance_norm; t["GroupNormalization"] = op_group_norm;
  t["MeanVarianceNormalization"] = op_mean_variance_norm; t["LpNormalization"] = op_lp_norm; t["GlobalAveragePool"] = op_global_average_pool;
  t["GlobalMaxPool"] = op_global_max_pool; t["MaxPool"] = op_max_pool; t["AveragePool"] = op_average_pool;
  t["ReduceSum"] = reduce<0>; t["ReduceMean"] = reduce<1>; t["ReduceMax"] = reduce<2>; t["ReduceMin"] = reduce<3>;
  t["ReduceProd"] = reduce<4>; t["ReduceL1"] = reduce<5>; t["ReduceL2"] = reduce<6>; t["ReduceLogSum"] = reduce<7>;
  t["ReduceLogSumExp"] = reduce<8>; t["ReduceSumSquare"] = reduce<9>;
}

}  // namespace grassaudit::onnx_rt
