#include "core/fused_head.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "core/bf16_xent_rows.h"
#include "runtime/runtime.h"

namespace grassaudit {
namespace {

void check_inputs(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets, int64_t chunk) {
  TORCH_CHECK(hidden.dim() == 2, "fused head: hidden must be [N, d], got ", hidden.sizes());
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) == hidden.size(1), "fused head: weight must be [V, d] with d = ",
              hidden.size(1), ", got ", weight.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0), "fused head: targets must be [N] with N = ",
              hidden.size(0), ", got ", targets.sizes());
  TORCH_CHECK(targets.scalar_type() == at::kLong, "fused head: targets must be int64, got ", targets.scalar_type());
  TORCH_CHECK(hidden.scalar_type() == weight.scalar_type(), "fused head: hidden (", hidden.scalar_type(),
              ") and weight (", weight.scalar_type(), ") must have one dtype");
  TORCH_CHECK(chunk >= 1, "fused head: chunk must be >= 1, got ", chunk);
}

struct HeadPass {
  at::Tensor loss_sum;  // 0-dim float64: summed -log p(target) over scored targets
  at::Tensor count;     // 0-dim int64: scored targets
  at::Tensor grad_h;    // [N, d] d(mean loss)/d hidden, undefined unless asked for
  at::Tensor grad_w;    // [V, d] d(mean loss)/d weight, undefined unless asked for
};

// The bf16 pass (CPU bf16 autocast, train --precision bf16): hb [N, d], wb [V, d] bf16, safe_t [N],
// scored [N] bool, inv_count 0-dim (defined when gradients are wanted), C rows per chunk -> out's
// sums and gradients (allocated by the caller). Per chunk the logits GEMM writes bf16 into one
// reused [C, V] buffer; bf16_xent_rows turns each row into its loss and, in place, its bf16
// gradient, which the two gradient GEMMs read as is: no float32 copy of the logits, no cast back.
void run_head_bf16(const at::Tensor& hb, const at::Tensor& wb, const at::Tensor& safe_t, const at::Tensor& scored,
                   const at::Tensor& inv_count, int64_t C, HeadPass& out) {
  const int64_t N = hb.size(0), V = wb.size(0);
  const bool grads = out.grad_h.defined() || out.grad_w.defined();
  const auto wbt = wb.t();                                        // [d, V] view
  auto buffer = at::empty({C, V}, wb.options());                  // bf16, the only [*, V] allocation
  // grad_w accumulates in the bf16 GEMM itself (beta = 1 after the first chunk): adding each
  // chunk's bf16 product into the float32 gradient would convert and add [V, d] once per chunk,
  // a pass over V * d floats per chunk; here the sum is converted once, at the end.
  auto grad_w_b = out.grad_w.defined() ? at::empty({V, hb.size(1)}, wb.options()) : at::Tensor();  // [V, d]
  for (int64_t start = 0; start < N; start += C) {
    const int64_t n = std::min(C, N - start);
    const auto hb_c = hb.narrow(0, start, n);                      // [n, d]
    const auto scored_c = scored.narrow(0, start, n);              // [n]
    auto zb = buffer.narrow(0, 0, n);                              // [n, V]
    at::mm_out(zb, hb_c, wbt);
    const auto coef = grads ? scored_c.to(at::kFloat).mul_(inv_count) : at::Tensor();  // [n]
    auto row_loss = bf16_xent_rows(zb, safe_t.narrow(0, start, n), coef);             // [n] float32
    row_loss.masked_fill_(scored_c.logical_not(), 0);
    out.loss_sum.add_(row_loss.sum(at::kDouble));
    if (!grads) continue;
    if (out.grad_h.defined()) out.grad_h.narrow(0, start, n).copy_(at::mm(zb, wb));   // [n, V] x [V, d]
    if (!out.grad_w.defined()) continue;
    if (start == 0) at::mm_out(grad_w_b, zb.t(), hb_c);                               // [V, n] x [n, d]
    else grad_w_b.addmm_(zb.t(), hb_c);
  }
  if (out.grad_w.defined()) out.grad_w.copy_(grad_w_b);
}

// hidden [N, d], weight [V, d], targets [N] -> HeadPass. Sums and gradients stay on the
// device (no host sync in here).
HeadPass run_head(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets, int64_t chunk,
                  int64_t ignore_index, bool want_grad_h, bool want_grad_w) {
  RECORD_FUNCTION("grassaudit::fused_head_loss", std::vector<c10::IValue>());  // a named range in op profiles
  const int64_t N = hidden.size(0), V = weight.size(0);
  const auto h = hidden.contiguous();
  const auto w = weight.contiguous();
  const auto wt = w.t();                                          // [d, V] view: BLAS transposes
  // CPU bf16 autocast (train --precision bf16): the three GEMMs in bf16 (mm_out is not seen by
  // autocast), the softmax and the loss in float32 (run_head_bf16).
  const bool bf16 = h.device().is_cpu() && cpu_bf16_autocast();
  const auto hb = bf16 ? h.to(at::kBFloat16) : at::Tensor();     // [N, d]
  const auto wb = bf16 ? w.to(at::kBFloat16) : at::Tensor();     // [V, d]
  const auto scored = targets.ne(ignore_index);                    // [N] bool
  const auto safe_t = at::where(scored, targets, at::zeros_like(targets));  // ignored rows read column 0
  HeadPass out;
  out.count = scored.sum();
  out.loss_sum = at::zeros({}, h.options().dtype(at::kDouble));
  const bool grads = want_grad_h || want_grad_w;
  at::Tensor inv_count;  // 0-dim, hidden's dtype
  if (grads) {
    inv_count = out.count.to(h.scalar_type()).reciprocal();
    inv_count.masked_fill_(out.count.eq(0), 0);  // nothing scored: zero gradients, not 0 * inf
  }
  if (want_grad_h) out.grad_h = at::empty_like(h);
  if (want_grad_w) out.grad_w = at::zeros_like(w);
  if (N == 0) return out;

  const int64_t C = std::min(chunk, N);
  if (bf16) {
    run_head_bf16(hb, wb, safe_t, scored, inv_count, C, out);
    return out;
  }
  auto buffer = at::empty({C, V}, h.options());                   // the only [*, V] allocation
  for (int64_t start = 0; start < N; start += C) {
    const int64_t n = std::min(C, N - start);
    const auto h_c = h.narrow(0, start, n);                        // [n, d]
    const auto t_c = safe_t.narrow(0, start, n).unsqueeze(1);      // [n, 1]
    const auto scored_c = scored.narrow(0, start, n);              // [n]
    auto z = buffer.narrow(0, 0, n);                               // [n, V]
    at::mm_out(z, h_c, wt);
    const auto row_max = at::amax(z, {1}, /*keepdim=*/true);       // [n, 1]
    const auto shifted_target = z.gather(1, t_c) - row_max;        // [n, 1]  z_t - m
    z.sub_(row_max).exp_();                                        // exp(z - m)
    const auto sum_exp = z.sum(1, /*keepdim=*/true);               // [n, 1]
    auto row_loss = (sum_exp.log() - shifted_target).squeeze(1);   // [n]  log sum exp(z - m) - (z_t - m)
    row_loss.masked_fill_(scored_c.logical_not(), 0);
    out.loss_sum.add_(row_loss.sum(at::kDouble));
    if (!grads) continue;
    // g = (softmax(z) - onehot(t)) * scored / count, in place over exp(z - m).
    const auto coef = scored_c.to(h.scalar_type()).mul_(inv_count).unsqueeze(1);  // [n, 1]
    z.mul_(coef / sum_exp);
    z.scatter_add_(1, t_c, coef.neg());
    if (want_grad_h) {
      auto grad_h_c = out.grad_h.narrow(0, start, n);  // rows of a contiguous tensor: written in place
      at::mm_out(grad_h_c, z, w);                      // [n, V] x [V, d]
    }
    if (want_grad_w) out.grad_w.addmm_(z.t(), h_c);                       // [V, n] x [n, d]
  }
  return out;
}

at::Tensor mean_loss(const HeadPass& pass, at::ScalarType dtype) {
  return pass.loss_sum.div(pass.count).to(dtype);  // 0 / 0 = NaN when nothing is scored
}

// The gradients are formed in the forward pass (the chunk's logits are gone by backward);
// backward scales them, in place, by the incoming gradient of the scalar loss and hands them
// over (no second [V, d] copy, and nothing of ours is left in the graph after backward; a
// second backward through the same graph, retain_graph, is refused).
struct FusedHeadFunction : public torch::autograd::Function<FusedHeadFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& weight, const at::Tensor& targets, int64_t chunk,
                            int64_t ignore_index) {
    auto pass = run_head(hidden, weight, targets, chunk, ignore_index, hidden.requires_grad(),
                         weight.requires_grad());
    ctx->saved_data["grad_h"] = pass.grad_h;
    ctx->saved_data["grad_w"] = pass.grad_w;
    return mean_loss(pass, hidden.scalar_type());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(ctx->saved_data.count("grad_h") == 1,
                "fused head: backward ran twice through one graph (retain_graph is not supported)");
    const auto& go = grads[0];  // 0-dim
    auto grad_h = ctx->saved_data["grad_h"].toTensor();
    auto grad_w = ctx->saved_data["grad_w"].toTensor();
    ctx->saved_data.clear();
    if (grad_h.defined()) grad_h.mul_(go);
    if (grad_w.defined()) grad_w.mul_(go);
    return {grad_h, grad_w, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor fused_head_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                           int64_t chunk, int64_t ignore_index) {
  check_inputs(hidden, weight, targets, chunk);
  const bool needs_graph = at::GradMode::is_enabled() && (hidden.requires_grad() || weight.requires_grad());
  if (!needs_graph) {
    auto pass = run_head(hidden, weight, targets, chunk, ignore_index, false, false);
    return mean_loss(pass, hidden.scalar_type());
  }
  return FusedHeadFunction::apply(hidden, weight, targets, chunk, ignore_index);
}

HeadLossSum fused_head_loss_sum(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                                int64_t chunk, int64_t ignore_index) {
  check_inputs(hidden, weight, targets, chunk);
  at::NoGradGuard no_grad;
  auto pass = run_head(hidden, weight, targets, chunk, ignore_index, false, false);
  return {pass.loss_sum.item<double>(), pass.count.item<int64_t>()};
}

at::Tensor reference_head_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                               int64_t ignore_index) {
  auto logits = at::mm(hidden, weight.t());  // [N, V]
  return at::cross_entropy_loss(logits, targets, {}, at::Reduction::Mean, ignore_index);
}

}  // namespace grassaudit
