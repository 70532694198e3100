#pragma once
// AdamW with each float32 parameter's update in one pass (parameter, gradient and both moments
// read once, written once) instead of LibTorch's eight tensor ops a parameter: the optimizer is
// ~4.5% of a bf16 training step, most of it memory traffic. The same math in float32 (decoupled
// weight decay, bias corrections, eps outside the square root); not bit-identical to LibTorch's
// op sequence (rounding order differs), so the bf16 path uses it and fp32 keeps LibTorch's AdamW.
// The state is LibTorch's own (AdamWParamState under LibTorch's keys): checkpoints load into
// either optimizer. Parameters it cannot fuse (not float32 CPU contiguous, amsgrad, a sparse
// gradient) take LibTorch's op sequence.
#include <torch/optim/adamw.h>

namespace grassaudit {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  at::Tensor step(LossClosure closure = nullptr) override;
};

// One element range of the fused update (exposed for the tests): p, g, m, v [n] float32.
struct AdamWCoefficients {
  float decay;        // 1 - lr * weight_decay
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float inv_sqrt_bias2;  // 1 / sqrt(1 - beta2^step)
  float eps;
  float neg_step_size;   // -lr / (1 - beta1^step)
};
void fused_adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWCoefficients& c);

}  // namespace grassaudit
