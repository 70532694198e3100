#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "formats/onnx/onnx_op.h"

// Elementwise math, logic and activations, with numpy broadcasting (ATen's own). ONNX keeps the
// first input's type where ATen would promote (Pow with an integer exponent, comparisons return
// bool), so results are cast back where the spec says.
namespace grassaudit::onnx_rt {

namespace {

#define UNARY(NAME, EXPR)                      \
  Ts NAME(OpContext& c) {                      \
    const at::Tensor& x = c.required(0);       \
    return one(EXPR);                          \
  }

// Floating-point unary ops write into their input when the op holds it alone (an intermediate
// no later node reads, OpContext::overwritable): the same values, without a fresh buffer.
#define UNARY_IN_PLACE(NAME, FN)                                                    \
  Ts NAME(OpContext& c) {                                                           \
    const at::Tensor& x = c.required(0);                                            \
    if (at::isFloatingType(x.scalar_type()) && c.overwritable(0)) return one(x.FN##_()); \
    return one(at::FN(x));                                                          \
  }

UNARY_IN_PLACE(op_sqrt, sqrt)
UNARY_IN_PLACE(op_exp, exp)
UNARY_IN_PLACE(op_log, log)
UNARY_IN_PLACE(op_erf, erf)
UNARY_IN_PLACE(op_tanh, tanh)
UNARY_IN_PLACE(op_sigmoid, sigmoid)
UNARY_IN_PLACE(op_relu, relu)
UNARY_IN_PLACE(op_neg, neg)
#undef UNARY_IN_PLACE
UNARY(op_abs, at::abs(x))
UNARY(op_sin, at::sin(x))
UNARY(op_cos, at::cos(x))
UNARY(op_tan, at::tan(x))
UNARY(op_asin, at::asin(x))
UNARY(op_acos, at::acos(x))
UNARY(op_atan, at::atan(x))
UNARY(op_sinh, at::sinh(x))
UNARY(op_cosh, at::cosh(x))
UNARY(op_asinh, at::asinh(x))
UNARY(op_acosh, at::acosh(x))
UNARY(op_atanh, at::atanh(x))
UNARY(op_floor, at::floor(x))
UNARY(op_ceil, at::ceil(x))
UNARY(op_round, at::round(x))  // half to even, as ONNX says
UNARY(op_reciprocal, at::reciprocal(x))
UNARY(op_sign, at::sign(x))
UNARY(op_not, at::logical_not(x))
UNARY(op_isnan, at::isnan(x))
UNARY(op_softsign, x / (1 + at::abs(x)))
UNARY(op_softplus, at::log1p(at::exp(-at::abs(x))) + at::relu(x))
UNARY(op_mish, x * at::tanh(at::log1p(at::exp(-at::abs(x))) + at::relu(x)))
UNARY(op_hardswish, x * at::clamp(x / 6 + 0.5, 0, 1))
UNARY(op_identity, x)
#undef UNARY

Ts op_isinf(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const bool neg = c.attr_int("detect_negative", 1) != 0, pos = c.attr_int("detect_positive", 1) != 0;
  at::Tensor inf = at::isinf(x);
  if (!neg) inf = at::logical_and(inf, x > 0);
  if (!pos) inf = at::logical_and(inf, x < 0);
  return one(inf);
}

Ts op_elu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double alpha = c.attr_float("alpha", 1.0f);
  return one(at::where(x > 0, x, alpha * at::expm1(x)));
}

Ts op_celu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double alpha = c.attr_float("alpha", 1.0f);
  return one(at::relu(x) + at::clamp_max(alpha * at::expm1(x / alpha), 0));
}

Ts op_selu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
  const double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
  return one(gamma * at::where(x > 0, x, alpha * at::expm1(x)));
}

Ts op_leaky_relu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double alpha = c.attr_float("alpha", 0.01f);
  return one(at::where(x >= 0, x, alpha * x));
}

Ts op_thresholded_relu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double alpha = c.attr_float("alpha", 1.0f);
  return one(at::where(x > alpha, x, at::zeros_like(x)));
}

Ts op_hard_sigmoid(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
  return one(at::clamp(alpha * x + beta, 0, 1));
}

Ts op_prelu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const at::Tensor& slope = c.required(1);
  return one(at::where(x >= 0, x, slope * x).to(x.scalar_type()));
}

Ts op_gelu(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const std::string approx = c.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") c.fail(fmt::format("approximate '{}' is not none or tanh", approx));
  // ATen's gelu computes the spec's formula for either form in one pass.
  return one(at::gelu(x, approx));
}

Ts op_shrink(OpContext& c) {
  const at::Tensor& x = c.required(0);
  const double bias = c.attr_float("bias", 0.0f), lambd = c.attr_float("lambd", 0.5f);
  return one(at::where(x < -lambd, x + bias, at::where(x > lambd, x - bias, at::zeros_like(x))).to(x.scalar_type()));
}

Ts op_clip(OpContext& c) {
  at::Tensor x = c.required(0);
  if (c.opset() < 11) {  // min and max were attributes
    const double lo = c.attr_float("min", -INFINITY), hi = c.attr_float("max", INFINITY);
    return one(at::clamp(x, lo, hi));
  }
  const at::Tensor lo = c.input(1), hi = c.input(2);
  if (lo.defined()) x = at::maximum(x, lo.to(x.scalar_type()));
  if (hi.defined()) x = at::minimum(x, hi.to(x.scalar_type()));
  return one(x);
}

// Binary ops: ATen's broadcasting; the result keeps the inputs' (equal) type.
// The input the result can be written into: one the op holds alone (OpContext::overwritable)
// whose shape is the broadcast shape and whose type is the result's; -1 when neither is.
int output_into(OpContext& c, const at::Tensor& a, const at::Tensor& b) {
  for (int i = 0; i < 2; ++i) {
    const at::Tensor& x = i == 0 ? a : b;
    const at::Tensor& y = i == 0 ? b : a;
    if (!at::isFloatingType(x.scalar_type()) || x.dim() < y.dim() || !c.overwritable(static_cast<size_t>(i))) continue;
    if (at::result_type(a, b) != x.scalar_type()) continue;
    if (at::infer_size(a.sizes(), b.sizes()) == x.sizes()) return i;
  }
  return -1;
}

template <at::Tensor& (*Out)(at::Tensor&, const at::Tensor&, const at::Tensor&), at::Tensor (*Fresh)(const at::Tensor&, const at::Tensor&)>
Ts binary(OpContext& c) {
  const at::Tensor &a = c.required(0), &b = c.required(1);
  const int into = output_into(c, a, b);
  if (into < 0) return one(Fresh(a, b));
  at::Tensor out = into == 0 ? a : b;
  Out(out, a, b);
  return one(out);
}

at::Tensor add_fresh(const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }
at::Tensor& add_into(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { return at::add_out(out, a, b); }
at::Tensor sub_fresh(const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b); }
at::Tensor& sub_into(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { return at::sub_out(out, a, b); }
at::Tensor mul_fresh(const at::Tensor& a, const at::Tensor& b) { return at::mul(a, b); }
at::Tensor& mul_into(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { return at::mul_out(out, a, b); }
at::Tensor div_fresh(const at::Tensor& a, const at::Tensor& b) { return at::div(a, b); }
at::Tensor& div_into(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { return at::div_out(out, a, b); }

Ts op_add(OpContext& c) { return binary<add_into, add_fresh>(c); }
Ts op_sub(OpContext& c) { return binary<sub_into, sub_fresh>(c); }
Ts op_mul(OpContext& c) { return binary<mul_into, mul_fresh>(c); }
Ts op_div(OpContext& c) {
  const at::Tensor &a = c.required(0), &b = c.required(1);
  if (at::isIntegralType(a.scalar_type(), /*includeBool=*/false)) return one(at::div(a, b, "trunc"));
  return binary<div_into, div_fresh>(c);
}
Ts op_pow(OpContext& c) {
  const at::Tensor &a = c.required(0), &b = c.required(1);
  return one(at::pow(a, b).to(a.scalar_type()));
}
Ts op_mod(OpContext& c) {
  const at::Tensor &a = c.required(0), &b = c.required(1);
  if (c.attr_int("fmod", 0)) return one(at::fmod(a, b));
  if (at::isFloatingType(a.scalar_type())) c.fail("fmod=0 on floating-point inputs (the spec requires fmod=1)");
  return one(at::remainder(a, b));
}
Ts op_equal(OpContext& c) { return one(at::eq(c.required(0), c.required(1))); }
Ts op_less(OpContext& c) { return one(at::lt(c.required(0), c.required(1))); }
Ts op_less_equal(OpContext& c) { return one(at::le(c.required(0), c.required(1))); }
Ts op_greater(OpContext& c) { return one(at::gt(c.required(0), c.required(1))); }
Ts op_greater_equal(OpContext& c) { return one(at::ge(c.required(0), c.required(1))); }
Ts op_and(OpContext& c) { return one(at::logical_and(c.required(0), c.required(1))); }
Ts op_or(OpContext& c) { return one(at::logical_or(c.required(0), c.required(1))); }
Ts op_xor(OpContext& c) { return one(at::logical_xor(c.required(0), c.required(1))); }
Ts op_bitwise_and(OpContext& c) { return one(at::bitwise_and(c.required(0), c.required(1))); }
Ts op_bitwise_or(OpContext& c) { return one(at::bitwise_or(c.required(0), c.required(1))); }
Ts op_bitwise_xor(OpContext& c) { return one(at::bitwise_xor(c.required(0), c.required(1))); }
Ts op_bitwise_not(OpContext& c) { return one(at::bitwise_not(c.required(0))); }

Ts op_where(OpContext& c) {
  const at::Tensor &cond = c.required(0), &a = c.required(1), &b = c.required(2);
  const at::Tensor mask = cond.to(at::kBool);
  // Written into b when the op holds it alone and it has the output's shape and type (a masked
  // fill, as exporters write masked_fill): each element is read before it is written.
  if (at::isFloatingType(b.scalar_type()) && c.overwritable(2) && b.dim() >= a.dim() && b.dim() >= mask.dim() &&
      at::result_type(a, b) == b.scalar_type() && at::infer_size(at::infer_size(mask.sizes(), a.sizes()), b.sizes()) == b.sizes()) {
    at::Tensor out = b;
    at::where_out(out, mask, a, b);
    return one(out);
  }
  return one(at::where(mask, a, b));
}

// Variadic ops: broadcast over every input.
template <int Kind>
Ts variadic(OpContext& c) {
  if (c.num_inputs() == 0) c.fail("needs at least one input");
  at::Tensor acc = c.required(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    const at::Tensor& x = c.required(i);
    if (Kind == 0) acc = at::add(acc, x);
    if (Kind == 1) acc = at::maximum(acc, x);
    if (Kind == 2) acc = at::minimum(acc, x);
  }
  if (Kind == 3) {  // Mean
    acc = c.required(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) acc = at::add(acc, c.required(i));
    acc = acc / static_cast<double>(c.num_inputs());
  }
  return one(acc);
}

}  // namespace

void add_elementwise_ops(OpTable& t) {
  t["Sqrt"] = op_sqrt; t["Exp"] = op_exp; t["Log"] = op_log; t["Erf"] = op_erf; t["Tanh"] = op_tanh;
  t["Sigmoid"] = op_sigmoid; t["Relu"] = op_relu; t["Neg"] = op_neg; t["Abs"] = op_abs; t["Sin"] = op_sin;
  t["Cos"] = op_cos; t["Tan"] = op_tan; t["Asin"] = op_asin; t["Acos"] = op_acos; t["Atan"] = op_atan;
  t["Sinh"] = op_sinh; t["Cosh"] = op_cosh; t["Asinh"] = op_asinh; t["Acosh"] = op_acosh; t["Atanh"] = op_atanh;
  t["Floor"] = op_floor; t["Ceil"] = op_ceil; t["Round"] = op_round; t["Reciprocal"] = op_reciprocal;
  t["Sign"] = op_sign; t["Not"] = op_not; t["IsNaN"] = op_isnan; t["IsInf"] = op_isinf; t["Softsign"] = op_softsign;
  t["Softplus"] = op_softplus; t["Mish"] = op_mish; t["HardSwish"] = op_hardswish; t["Identity"] = op_identity;
  t["Elu"] = op_elu; t["Celu"] = op_celu; t["Selu"] = op_selu; t["LeakyRelu"] = op_leaky_relu;
  t["ThresholdedRelu"] = op_thresholded_relu; t["HardSigmoid"] = op_hard_sigmoid; t["PRelu"] = op_prelu;
  t["Gelu"] = op_gelu; t["Shrink"] = op_shrink; t["Clip"] = op_clip;
  t["Add"] = op_add; t["Sub"] = op_sub; t["Mul"] = op_mul; t["Div"] = op_div; t["Pow"] = op_pow; t["Mod"] = op_mod;
  t["Equal"] = op_equal; t["Less"] = op_less; t["LessOrEqual"] = op_less_equal; t["Greater"] = op_greater;
  t["GreaterOrEqual"] = op_greater_equal; t["And"] = op_and; t["Or"] = op_or; t["Xor"] = op_xor;
  t["BitwiseAnd"] = op_bitwise_and; t["BitwiseOr"] = op_bitwise_or; t["BitwiseXor"] = op_bitwise_xor;
  t["BitwiseNot"] = op_bitwise_not; t["Where"] = op_where;
  t["Sum"] = variadic<0>; t["Max"] = variadic<1>; t["Min"] = variadic<2>; t["Mean"] = variadic<3>;
}

}  // namespace grassaudit::onnx_rt
