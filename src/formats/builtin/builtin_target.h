#pragma once
// Audit target for grassaudit's own language models (any registered mixer).
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_target.h"
#include "audit/dtype_twins.h"
#include "core/language_model.h"
#include "formats/placed_target.h"

namespace grassaudit {

class BuiltinLmTarget : public PlacedTarget<AuditTarget> {
 public:
  // output: "hidden" (final LayerNorm output [B, L, d]) or "logits" ([B, L, V]). logits_t =
  // E hidden_t is a position-wise map with E of full column rank d, so logits_t moves exactly
  // when hidden_t moves: the verdict is the same, and hidden skips the V-wide head (most of the
  // forward cost at V = 30522). tests/audit checks that both outputs give the same verdict.
  // known_weights_sha256: the caller has just hashed these very weights (the gate, for its
  // cache); weights_hash() returns it instead of hashing ~50 MB again.
  BuiltinLmTarget(LanguageModel model, std::string output = "hidden", std::string known_weights_sha256 = {});
  std::string describe() const override;
  InputSpec input() const override;
  at::Tensor forward(const at::Tensor& x) override;
  bool to_device(const c10::Device& device, std::string* why) override;
  void set_train(bool train) override;
  bool is_training() const override;
  bool to_dtype(at::ScalarType dtype, std::string* why) override;
  bool supports_gradient() const override { return true; }
  at::Tensor embed(const at::Tensor& x) override;
  at::Tensor forward_from_embedding(const at::Tensor& e) override;
  std::string weights_hash() override;
  std::vector<at::Tensor> jitter_parameters() override;
  // The hidden output reads the token table only at the ids of x (the logits read all of it).
  std::vector<RowsRead> jitter_rows_read(const at::Tensor& x) override;
  // The model's own incremental path (LanguageModelImpl::step_hidden): KV cache / Grassmann buffer.
  std::string incremental_missing() override { return model_->incremental_unsupported(); }
  std::unique_ptr<IncrementalRun> start_incremental(int64_t batch) override;
  // The structural pass over the model's named parameters (audit/zero_redraw.h).
  bool supports_structural_pass() const override { return true; }
  std::vector<RedrawnTensor> redraw_zero_parameters(uint64_t seed) override;
  void restore_redrawn_parameters() override;

 private:
  LanguageModel model_;
  std::string output_;
  std::string known_hash_;
  std::vector<std::pair<std::string, at::Tensor>> redrawn_;  // name, the zeros it held
  DtypeTwins twins_;  // the model's tensors in the other dtype (to_dtype)
};

}  // namespace grassaudit
