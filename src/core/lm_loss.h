#pragma once
// The language model's next-token loss, by one of two paths that give the same numbers:
//   fused:        final hidden states -> fused_head_loss (chunked, no [B*L, V] logits; the default)
//   materialized: model->head(hidden) = the full [B, L, V] logits -> at::cross_entropy_loss
//                 (the readable reference)
// Selected by --loss-impl on train, eval and bench.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

#include "core/fused_head.h"
#include "core/language_model.h"

namespace grassaudit {

enum class LossImpl { kFused, kMaterialized };

// "fused" | "materialized"; anything else: InputError "--loss-impl must be fused or materialized, got 'x'".
LossImpl parse_loss_impl(const std::string& name);
const char* loss_impl_name(LossImpl impl);

// ids, targets: [B, L] int64 -> mean next-token cross-entropy over targets != kIgnoreIndex, a
// 0-dim tensor differentiable in the model's parameters (the tied embedding included).
torch::Tensor lm_loss(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets, LossImpl impl,
                      int64_t chunk = kDefaultHeadChunk);

// ids, targets: [B, L] -> summed cross-entropy (float64) and scored-target count, no gradient
// (evaluation and perplexity).
HeadLossSum lm_loss_sum(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets, LossImpl impl,
                        int64_t chunk = kDefaultHeadChunk);

}  // namespace grassaudit
