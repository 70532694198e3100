#include "core/language_model.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include "core/bf16_linear.h"
#include "util/error.h"

namespace grassaudit {

BlockImpl::BlockImpl(const ModelConfig& cfg, int64_t layer) : pre_norm_(cfg.pre_norm()) {
  mixer_ = MixerRegistry::instance().create(cfg, layer);
  register_module("mixer", mixer_);
  ffn_in_ = register_module("ffn_in", torch::nn::Linear(cfg.d_model, cfg.d_ff));
  ffn_out_ = register_module("ffn_out", torch::nn::Linear(cfg.d_ff, cfg.d_model));
  ffn_norm_ = register_module("ffn_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
  dropout_ = register_module("dropout", RowDropout(cfg.dropout));
}

// h: [B, L, d] -> [B, L, d]. post: LN(hhat + dropout(FFN(hhat))); pre: hhat + dropout(FFN(LN(hhat))).
torch::Tensor BlockImpl::forward(const torch::Tensor& h) {
  auto hhat = mixer_->forward(h);
  auto ffn = [&](const torch::Tensor& x) { return linear_rows(*ffn_out_, at::gelu(linear_rows(*ffn_in_, x))); };
  if (pre_norm_) return hhat + dropout_->forward(ffn(ffn_norm_->forward(hhat)));
  return ffn_norm_->forward(hhat + dropout_->forward(ffn(hhat)));
}

torch::Tensor BlockImpl::step(const torch::Tensor& h, MixerCache& cache) {
  auto hhat = mixer_->step(h, cache);
  auto ffn = [&](const torch::Tensor& x) { return ffn_out_->forward(at::gelu(ffn_in_->forward(x))); };
  if (pre_norm_) return hhat + dropout_->forward(ffn(ffn_norm_->forward(hhat)));
  return ffn_norm_->forward(hhat + dropout_->forward(ffn(hhat)));
}

LanguageModelImpl::LanguageModelImpl(const ModelConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  tok_emb_ = register_module("tok_emb", torch::nn::Embedding(cfg.vocab_size, cfg.d_model));
  pos_emb_ = register_module("pos_emb", torch::nn::Embedding(cfg.max_len, cfg.d_model));
  // GPT-2 style small init: N(0, 1) embeddings would make tied logits huge at step 0.
  torch::nn::init::normal_(tok_emb_->weight, 0.0, 0.02);
  torch::nn::init::normal_(pos_emb_->weight, 0.0, 0.02);
  emb_dropout_ = register_module("emb_dropout", RowDropout(cfg.dropout));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg.layers; ++i) blocks_->push_back(Block(cfg_, i));
  final_norm_ = register_module("final_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
}

torch::Tensor LanguageModelImpl::embed_tokens(const torch::Tensor& ids) {
  if (ids.dim() != 2) throw InputError(fmt::format("token ids must be [B, L], got {} dims", ids.dim()));
  return tok_emb_->forward(ids);
}

torch::Tensor LanguageModelImpl::hidden_from_embeddings(const torch::Tensor& tok) {
  const int64_t L = tok.size(1);
  if (L > cfg_.max_len)
    throw InputError(fmt::format("sequence length {} exceeds the model's max_len {}", L, cfg_.max_len));
  auto pos = pos_emb_->weight.narrow(0, 0, L).unsqueeze(0);  // [1, L, d]
  auto h = emb_dropout_->forward(tok + pos);
  for (auto& block : *blocks_) h = block->as<BlockImpl>()->forward(h);
  return final_norm_->forward(h);
}

torch::Tensor LanguageModelImpl::head(const torch::Tensor& hidden) {
  return at::matmul(hidden, tok_emb_->weight.t());
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& ids) {
  return head(hidden_from_embeddings(embed_tokens(ids)));
}

bool LanguageModelImpl::has_incremental() const { return incremental_unsupported().empty(); }

std::string LanguageModelImpl::incremental_unsupported() const {
  for (const auto& block : *blocks_) {
    const auto& mixer = block->as<BlockImpl>()->mixer();
    if (!mixer.has_incremental()) return mixer.incremental_unsupported();
  }
  return {};
}

LmState LanguageModelImpl::init_state() const {
  if (const auto why = incremental_unsupported(); !why.empty()) throw InputError(why);
  LmState s;
  s.layers.resize(blocks_->size());
  return s;
}

// ids: [B, n] -> hidden [B, n, d] for positions offset .. offset+n-1.
torch::Tensor LanguageModelImpl::step_hidden(const torch::Tensor& ids, LmState& state) {
  if (ids.dim() != 2 || ids.size(1) < 1)
    throw InputError(fmt::format("step: token ids must be [B, n] with n >= 1, got {} dims", ids.dim()));
  if (state.layers.size() != blocks_->size()) throw InputError("step: state was not made by init_state()");
  const int64_t n = ids.size(1);
  if (state.offset + n > cfg_.max_len)
    throw InputError(fmt::format("context of {} tokens exceeds the model's max_len {} (learned positions)",
                                 state.offset + n, cfg_.max_len));
  auto pos = pos_emb_->weight.narrow(0, state.offset, n).unsqueeze(0);  // [1, n, d]
  auto h = emb_dropout_->forward(tok_emb_->forward(ids) + pos);
  size_t i = 0;
  for (auto& block : *blocks_) h = block->as<BlockImpl>()->step(h, state.layers[i++]);
  state.offset += n;
  return final_norm_->forward(h);
}

int64_t LanguageModelImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace grassaudit
