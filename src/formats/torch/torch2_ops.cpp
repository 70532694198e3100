#include "formats/torch/torch2_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace grassaudit {
namespace {

using at::Tensor;

// PyTorch 2.6's schema, verbatim (native_functions.yaml). `scale` came in 2.1 and `enable_gqa`
// in 2.5: a file from an older 2.x calls with fewer arguments and gets the defaults.
constexpr const char* kSdpaSchema =
    "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
    "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor";

// A boolean mask (true = attend) as the additive float mask PyTorch makes of it
// (convert_boolean_attn_mask): 0 where true, -inf where false.
Tensor additive_mask(const Tensor& mask, at::ScalarType dtype) {
  if (mask.scalar_type() != at::kBool) return mask;
  return at::where(mask.logical_not(), -std::numeric_limits<double>::infinity(),
                   at::scalar_tensor(0.0, mask.options().dtype(dtype)));
}

// PyTorch's _safe_softmax (2.5+, the math path's softmax): a row whose scores are all -inf
// (every key masked) gives zeros instead of NaN.
Tensor safe_softmax(const Tensor& scores) {
  auto out = at::softmax(scores, -1);
  auto masked_rows = scores.eq(-std::numeric_limits<double>::infinity()).all(-1, /*keepdim=*/true);
  return at::where(masked_rows, at::scalar_tensor(0.0, out.options()), out);
}

// The math of PyTorch 2.6's reference path (_scaled_dot_product_attention_math), which every
// other backend is tested against. Shapes: query [N..., Hq, L, E], key [N..., Hk, S, E], value
// [N..., Hk, S, Ev], attn_mask broadcastable to [N..., Hq, L, S] (bool: true = attend; float:
// added to the scores) -> [N..., Hq, L, Ev].
Tensor sdpa_math(const Tensor& query_in, const Tensor& key_in, const Tensor& value_in,
                 const c10::optional<Tensor>& attn_mask_in, double dropout_p, bool is_causal,
                 c10::optional<double> scale, bool enable_gqa) {
  TORCH_CHECK(query_in.dim() >= 2 && key_in.dim() >= 2 && value_in.dim() >= 2,
              "scaled_dot_product_attention: query, key and value need at least 2 dimensions, got ",
              query_in.dim(), ", ", key_in.dim(), ", ", value_in.dim());
  TORCH_CHECK(query_in.scalar_type() == key_in.scalar_type() && query_in.scalar_type() == value_in.scalar_type(),
              "scaled_dot_product_attention: expected query, key and value to have the same dtype, got ",
              query_in.scalar_type(), ", ", key_in.scalar_type(), ", ", value_in.scalar_type());
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0, "scaled_dot_product_attention: dropout_p must be in [0, 1], got ",
              dropout_p);
  if (attn_mask_in.has_value())
    TORCH_CHECK(attn_mask_in->scalar_type() == at::kBool || attn_mask_in->scalar_type() == query_in.scalar_type(),
                "scaled_dot_product_attention: expected attn_mask dtype to be bool or to match query dtype, got ",
                attn_mask_in->scalar_type(), " and ", query_in.scalar_type());
  const auto origin = query_in.scalar_type();
  // Half and bfloat16 run in float32, as PyTorch's math path does.
  const bool low = origin == at::kHalf || origin == at::kBFloat16;
  const Tensor q_acc = low ? query_in.to(at::kFloat) : query_in;
  const Tensor k_acc = low ? key_in.to(at::kFloat) : key_in;
  const Tensor v_acc = low ? value_in.to(at::kFloat) : value_in;

  c10::optional<Tensor> attn_mask;
  if (attn_mask_in.has_value()) attn_mask = additive_mask(*attn_mask_in, q_acc.scalar_type());
  // sqrt of the scale on both q and k before the product, for range (PyTorch's comment).
  const bool negative = scale.has_value() && *scale < 0.0;
  const double s = scale.has_value() ? std::abs(*scale) : 1.0 / std::sqrt(static_cast<double>(q_acc.size(-1)));
  const double root = std::sqrt(s);
  const Tensor q = q_acc * (negative ? -root : root);
  if (is_causal) {
    TORCH_CHECK(!attn_mask.has_value(),
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
    const auto L = q.size(-2), S = k_acc.size(-2);
    attn_mask = additive_mask(at::ones({L, S}, q.options().dtype(at::kBool)).tril(), q.scalar_type());
  }
  Tensor k = k_acc, v = v_acc;
  if (enable_gqa) {  // grouped-query attention: each key/value head serves Hq / Hk query heads
    TORCH_CHECK(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3,
                "scaled_dot_product_attention: enable_gqa needs a head dimension (-3) on query, key and value");
    const auto hq = q.size(-3), hk = k.size(-3), hv = v.size(-3);
    TORCH_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0,
                "scaled_dot_product_attention: number of heads in key/value must divide number of heads in query, got ",
                hq, ", ", hk, ", ", hv);
    k = k.repeat_interleave(hq / hk, -3);
    v = v.repeat_interleave(hq / hv, -3);
  }
  Tensor attn = at::matmul(q, k.transpose(-2, -1) * root);
  if (attn_mask.has_value()) attn = attn + *attn_mask;
  attn = safe_softmax(attn);
  if (dropout_p > 0.0) attn = at::dropout(attn, dropout_p, /*train=*/true);  // as PyTorch: whatever the mode
  return at::matmul(attn, v).to(origin);
}

// PyTorch 2.6's schema (nn.RMSNorm and F.rms_norm, 2.4+).
constexpr const char* kRmsNormSchema =
    "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor";

// PyTorch 2.6's composite rms_norm: x * rsqrt(mean(x^2 over the normalized dims) + eps) * weight,
// computed in float32 for half/bfloat16 inputs; eps defaults to the machine epsilon of the
// computing dtype. input [..., *normalized_shape], weight [*normalized_shape] -> input's shape.
Tensor rms_norm_math(const Tensor& input, c10::SymIntArrayRef normalized_shape_sym, const c10::optional<Tensor>& weight,
                     c10::optional<double> eps) {
  std::vector<int64_t> normalized_shape;
  for (const auto& s : normalized_shape_sym) normalized_shape.push_back(s.expect_int());
  const auto n = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(n >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = ", normalized_shape);
  TORCH_CHECK(input.dim() >= n, "Given normalized_shape=", normalized_shape, ", expected input with shape [*, ",
              normalized_shape, "], but got input of size", input.sizes());
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(input.size(input.dim() - n + i) == normalized_shape[i], "Given normalized_shape=", normalized_shape,
                ", expected input with shape [*, ", normalized_shape, "], but got input of size", input.sizes());
  if (weight.has_value())
    TORCH_CHECK(weight->sizes().vec() == normalized_shape, "Expected weight to be of same shape as normalized_shape, but got ",
                "weight of shape ", weight->sizes(), " and normalized_shape = ", normalized_shape);
  const auto low = input.scalar_type() == at::kHalf || input.scalar_type() == at::kBFloat16;
  const Tensor x = low ? input.to(at::kFloat) : input;
  const double e = eps.has_value() ? *eps
                   : x.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                    : static_cast<double>(std::numeric_limits<float>::epsilon());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < n; ++i) dims.push_back(input.dim() - i - 1);
  const Tensor r = at::rsqrt(x.pow(2).mean(dims, /*keepdim=*/true) + e);
  Tensor out = x.mul(r).type_as(input);
  if (weight.has_value()) out = out.mul(*weight);
  return out;
}

struct Registry {
  std::vector<std::unique_ptr<torch::Library>> libraries;
  std::vector<std::string> registered;
};

bool has_op(const char* name) {
  return c10::Dispatcher::singleton().findSchema(c10::OperatorName(name, "")).has_value();
}

}  // namespace

const std::vector<std::string>& ensure_torch2_ops() {
  static Registry registry;
  static std::once_flag once;
  std::call_once(once, [] {
    if (!has_op("aten::scaled_dot_product_attention")) {
      auto lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "aten", c10::nullopt, __FILE__, __LINE__);
      lib->def(kSdpaSchema);
      // CompositeImplicitAutograd: built from ATen ops, so autograd (the audit's gradient
      // method) and every backend come for free.
      lib->impl("scaled_dot_product_attention",
                torch::dispatch(c10::DispatchKey::CompositeImplicitAutograd, TORCH_FN(sdpa_math)));
      registry.libraries.push_back(std::move(lib));
      registry.registered.push_back("aten::scaled_dot_product_attention");
    }
    if (!has_op("aten::rms_norm")) {
      auto lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "aten", c10::nullopt, __FILE__, __LINE__);
      lib->def(kRmsNormSchema);
      lib->impl("rms_norm", torch::dispatch(c10::DispatchKey::CompositeImplicitAutograd, TORCH_FN(rms_norm_math)));
      registry.libraries.push_back(std::move(lib));
      registry.registered.push_back("aten::rms_norm");
    }
  });
  return registry.registered;
}

}  // namespace grassaudit
