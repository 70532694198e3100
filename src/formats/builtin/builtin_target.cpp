#include "formats/builtin/builtin_target.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <fmt/format.h>

#include "audit/zero_redraw.h"
#include "core/checkpoint.h"
#include "util/error.h"

namespace grassaudit {

BuiltinLmTarget::BuiltinLmTarget(LanguageModel model, std::string output, std::string known_weights_sha256)
    : model_(std::move(model)), output_(std::move(output)), known_hash_(std::move(known_weights_sha256)) {
  if (output_ != "logits" && output_ != "hidden")
    throw InputError(fmt::format("audit output must be logits or hidden, got '{}'", output_));
  dtype_ = model_->parameters().front().scalar_type();
  device_ = model_->parameters().front().device();
}

std::string BuiltinLmTarget::describe() const {
  const auto& c = model_->config();
  return fmt::format("built-in {} LM (d {}, layers {}, V {}, max_len {}; output {})", c.mixer, c.d_model, c.layers,
                     c.vocab_size, c.max_len, output_);
}

InputSpec BuiltinLmTarget::input() const {
  InputSpec s;
  s.kind = InputSpec::Kind::kTokens;
  s.size = model_->config().vocab_size;
  return s;
}

at::Tensor BuiltinLmTarget::embed(const at::Tensor& x) { return model_->embed_tokens(x.to(device_)); }

at::Tensor BuiltinLmTarget::forward_from_embedding(const at::Tensor& e) {
  auto hidden = model_->hidden_from_embeddings(e);
  return output_ == "logits" ? model_->head(hidden) : hidden;
}

at::Tensor BuiltinLmTarget::forward(const at::Tensor& x) { return forward_from_embedding(embed(x)); }

void BuiltinLmTarget::set_train(bool train) { model_->train(train); }
bool BuiltinLmTarget::is_training() const { return model_->is_training(); }

bool BuiltinLmTarget::to_device(const c10::Device& device, std::string*) {
  model_->to(device);
  device_ = device;
  twins_.clear();  // copies kept on the old device
  return true;
}

bool BuiltinLmTarget::to_dtype(at::ScalarType dtype, std::string*) {
  // What model_->to(dtype) does (every floating parameter and buffer, set_data), through the
  // copies kept from the last switch.
  at::NoGradGuard no_grad;
  for (const auto& p : model_->named_parameters(/*recurse=*/true))
    if (at::isFloatingType(p.value().scalar_type())) p.value().set_data(twins_.convert("p:" + p.key(), p.value(), dtype));
  for (const auto& b : model_->named_buffers(/*recurse=*/true))
    if (at::isFloatingType(b.value().scalar_type())) b.value().set_data(twins_.convert("b:" + b.key(), b.value(), dtype));
  dtype_ = dtype;
  return true;
}

std::vector<at::Tensor> BuiltinLmTarget::jitter_parameters() { return model_->parameters(); }

std::vector<AuditTarget::RowsRead> BuiltinLmTarget::jitter_rows_read(const at::Tensor& x) {
  if (output_ != "hidden") return {};
  const at::Tensor& table = model_->tied_weight();  // [V, d]
  return {{table, std::get<0>(at::_unique(x.reshape(-1), /*sorted=*/true)).to(table.device())}};
}

namespace {
class BuiltinRun : public IncrementalRun {
 public:
  BuiltinRun(LanguageModel model, bool logits, c10::Device device)
      : model_(std::move(model)), logits_(logits), device_(device), state_(model_->init_state()) {}
  // ids [B, n] -> hidden [B, n, d] or logits [B, n, V], as the target's forward.
  at::Tensor step(const at::Tensor& ids) override {
    auto h = model_->step_hidden(ids.to(device_), state_);
    return logits_ ? model_->head(h) : h;
  }

 private:
  LanguageModel model_;
  bool logits_;
  c10::Device device_;
  LmState state_;
};
}  // namespace

std::unique_ptr<IncrementalRun> BuiltinLmTarget::start_incremental(int64_t) {
  return std::make_unique<BuiltinRun>(model_, output_ == "logits", device_);
}

std::vector<RedrawnTensor> BuiltinLmTarget::redraw_zero_parameters(uint64_t seed) {
  at::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> params;
  for (const auto& p : model_->named_parameters()) params.emplace_back(p.key(), p.value());
  std::vector<RedrawnTensor> out;
  for (const auto& r : plan_zero_redraws(params, seed)) {
    for (auto& [name, value] : params)
      if (name == r.record.name) {
        redrawn_.emplace_back(name, value.detach().clone());
        value.detach().copy_(r.drawn.to(value.scalar_type()));
      }
    out.push_back(r.record);
  }
  return out;
}

void BuiltinLmTarget::restore_redrawn_parameters() {
  at::NoGradGuard no_grad;
  for (const auto& p : model_->named_parameters())
    for (const auto& [name, zeros] : redrawn_)
      if (p.key() == name) p.value().detach().copy_(zeros.to(p.value().scalar_type()));
  redrawn_.clear();
}

std::string BuiltinLmTarget::weights_hash() {
  return known_hash_.empty() ? weights_sha256(*model_) : known_hash_;
}

}  // namespace grassaudit
