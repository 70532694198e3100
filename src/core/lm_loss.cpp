#include "core/lm_loss.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "util/error.h"

namespace grassaudit {

LossImpl parse_loss_impl(const std::string& name) {
  if (name == "fused") return LossImpl::kFused;
  if (name == "materialized") return LossImpl::kMaterialized;
  throw InputError(fmt::format("--loss-impl must be fused or materialized, got '{}'", name));
}

const char* loss_impl_name(LossImpl impl) { return impl == LossImpl::kFused ? "fused" : "materialized"; }

namespace {
// ids: [B, L] -> final hidden states [B*L, d] and targets [B*L].
struct FlatHidden {
  torch::Tensor hidden, targets;
};
FlatHidden flat_hidden(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets) {
  if (ids.dim() != 2 || targets.sizes() != ids.sizes())
    throw InputError(fmt::format("ids and targets must both be [B, L], got {} and {} dims", ids.dim(), targets.dim()));
  auto hidden = model->hidden_from_embeddings(model->embed_tokens(ids));  // [B, L, d]
  return {hidden.reshape({-1, hidden.size(-1)}), targets.reshape({-1})};
}
}  // namespace

torch::Tensor lm_loss(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets, LossImpl impl,
                      int64_t chunk) {
  auto f = flat_hidden(model, ids, targets);
  if (impl == LossImpl::kFused) return fused_head_loss(f.hidden, model->tied_weight(), f.targets, chunk);
  auto logits = model->head(f.hidden);  // [B*L, V]
  return at::cross_entropy_loss(logits, f.targets, {}, at::Reduction::Mean, kIgnoreIndex);
}

HeadLossSum lm_loss_sum(LanguageModel& model, const torch::Tensor& ids, const torch::Tensor& targets, LossImpl impl,
                        int64_t chunk) {
  at::NoGradGuard no_grad;
  auto f = flat_hidden(model, ids, targets);
  if (impl == LossImpl::kFused) return fused_head_loss_sum(f.hidden, model->tied_weight(), f.targets, chunk);
  auto logits = model->head(f.hidden);  // [B*L, V]
  // Per-token losses summed in float64, as the fused path sums them (ignored targets give 0).
  auto per_token = at::cross_entropy_loss(logits, f.targets, {}, at::Reduction::None, kIgnoreIndex);  // [B*L]
  return {per_token.sum(at::kDouble).item<double>(), f.targets.ne(kIgnoreIndex).sum().item<int64_t>()};
}

}  // namespace grassaudit
