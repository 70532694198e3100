#pragma once
// What the causality audit probes: any model mapping inputs x_1..x_L to outputs y_1..y_L.
// Inputs are token ids [B, L] int64 (uniform over the vocabulary when perturbed) or real
// features [B, L, C] (Gaussian at --feature-scale). Outputs are flattened to [B, L, K].
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "audit/audit_cost.h"
#include "audit/unit_probe.h"
#include "audit/train_mode_proof.h"
#include "util/non_copyable.h"

namespace grassaudit {

struct InputSpec {
  enum class Kind { kTokens, kFeatures } kind = Kind::kTokens;
  int64_t size = 0;          // V for tokens, C for features
  double feature_scale = 1;  // std of the Gaussian features are drawn from
  // Several tokens inputs side by side (audit/model_signature.h): ids [B, L, n], slot j uniform
  // over vocab_slots[j]; `size` is then their largest. Empty: one tokens input [B, L].
  std::vector<int64_t> vocab_slots;
  // [n] int64 tensor of the slots' vocabularies, or a 0-dim tensor holding `size`.
  at::Tensor vocab_tensor() const;
  // Parses "tokens:V" or "features:C"; InputError otherwise.
  static InputSpec parse(const std::string& text);
  std::string str() const;
};

// One incremental run from a fresh state (audit/incremental_audit.h): step(x) with the next n >= 1
// positions, x [B, n] ids or [B, n, C] features in the target's dtype -> their outputs [B, n, ...].
class IncrementalRun {
 public:
  virtual ~IncrementalRun() = default;
  virtual at::Tensor step(const at::Tensor& x) = 0;
};

// A parameter tensor the structural pass redrew (causality_audit.h): exactly zero in the weights
// given, drawn from N(0, scale^2) for the pass and put back to zero after it.
struct RedrawnTensor {
  std::string name;
  std::vector<int64_t> shape;
  double scale = 0;       // the RMS of its siblings (see redraw_zero_parameters)
};

class AuditTarget {
 public:
  virtual ~AuditTarget() = default;
  virtual std::string describe() const = 0;
  virtual InputSpec input() const = 0;
  // x: [B, L] int64 or [B, L, C] floating (in the target's dtype) -> y: [B, L, K] (any K). x may
  // be on the CPU (the probes draw their inputs there, the same draws on every device): the
  // target moves it to device(); y is on device().
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  // Where the model runs: its parameters, and the outputs of forward. The probes compare outputs
  // there and read back only their per-position effects.
  virtual c10::Device device() const { return c10::Device(c10::kCPU); }
  // Moves the model to `device` (before an audit starts); false with `why` when it cannot run
  // there (the default: anything but the CPU).
  virtual bool to_device(const c10::Device& device, std::string* why);
  virtual void set_train(bool train) = 0;
  virtual bool is_training() const = 0;
  // Converts parameters (and float inputs) to dtype; returns false with `why` if impossible.
  virtual bool to_dtype(at::ScalarType dtype, std::string* why) = 0;
  virtual at::ScalarType dtype() const = 0;
  // When the float64 forward fails (a traced model with float32 constants baked in): make the
  // float64 run possible another way, e.g. with the graph's float32 constants and dtype arguments
  // promoted; returns false (the default) when there is none, else true with `what` was done.
  virtual bool promote_float32_constants(std::string* what) {
    (void)what;
    return false;
  }
  // The gradient method: inputs as a differentiable leaf. Tokens: the input embeddings E[x]
  // [B, L, E]; features: x itself. Return false when the target cannot expose them.
  virtual bool supports_gradient() const { return false; }
  virtual at::Tensor embed(const at::Tensor& x) { return x; }
  virtual at::Tensor forward_from_embedding(const at::Tensor& e) { return forward(e); }
  // The floating tensors the precision-floor measurement (audit_prober.h) may scale in place by
  // 1 + O(1e-6) and then restore bit for bit: the model's parameters. Empty (the default): only
  // a features input is jittered.
  virtual std::vector<at::Tensor> jitter_parameters() { return {}; }
  // Of jitter_parameters(), those a forward of `x` reads only in part: rows (dim 0) `rows`
  // (int64, on the parameter's device) of `parameter` (the same tensor). The floor jitters only
  // those rows; the others are never read, so the forwards, and the floor, are the same bits as
  // with the whole tensor jittered. Empty (the default): every parameter is read whole.
  struct RowsRead {
    at::Tensor parameter, rows;
  };
  virtual std::vector<RowsRead> jitter_rows_read(const at::Tensor& x) { return {}; }
  // The incremental path: "" when the target has one, else one line saying what is missing.
  virtual std::string incremental_missing() { return "this target has no incremental path"; }
  // A fresh run for `batch` rows (init_state); InputError when there is none.
  virtual std::unique_ptr<IncrementalRun> start_incremental(int64_t batch);
  // Whether train mode provably computes what eval mode does, op for op (audit/train_mode_proof.h);
  // nullopt: the target offers no proof (the built-in models: their dropout is live in train mode).
  virtual std::optional<TrainModeProof> train_mode_proof() { return std::nullopt; }
  // The units a leak can be named at (audit/unit_probe.h), or nullptr where the target cannot be
  // looked inside (then why_no_units says so, in a line).
  virtual UnitProbe* unit_probe() { return nullptr; }
  virtual std::string why_no_units() const { return "this target cannot be looked inside"; }
  // SHA-256 of the exact weights probed (empty when unknown).
  virtual std::string weights_hash() { return {}; }
  // State a forward may update (a module's buffers and non-parameter attributes): the audit's
  // premise is that the same input gives the same output. snapshot_state records it (and, with
  // `restore`, puts it back after every forward from then on, so no verdict depends on the order
  // of passes); changed_state names the first thing that differs from the record ("" if none);
  // restore_state puts the record back; end_state_tracking restores it and stops. Stateless
  // targets keep the defaults.
  virtual void snapshot_state(bool restore) { (void)restore; }
  virtual std::string changed_state() { return {}; }
  virtual void restore_state() {}
  virtual void end_state_tracking() {}
  // While held, a forward leaves the state where it put it: a pass whose backward is still to
  // come (the gradient method) saved those buffers for it, and putting the record back in place
  // would bump their version and void the backward. Releasing puts the record back once.
  virtual void hold_state(bool hold) { (void)hold; }
  // The structural pass: every floating parameter tensor that is exactly zero (biases aside: a
  // bias multiplies nothing, so its zero switches no path off) redrawn from N(0, s^2), s the RMS
  // of the non-zero parameters of the closest enclosing module that has any (the whole model at
  // the top; 0.02 when every parameter is zero), from a generator seeded with `seed`. Returns
  // what was redrawn; empty: nothing is exactly zero, or the target cannot redraw (the default).
  // restore_redrawn_parameters puts the zeros back, bit for bit.
  virtual bool supports_structural_pass() const { return false; }
  virtual std::vector<RedrawnTensor> redraw_zero_parameters(uint64_t seed) {
    (void)seed;
    return {};
  }
  virtual void restore_redrawn_parameters() {}
};

// "cpu", "cuda" (device 0) or "cuda:N" as a device an audit may run on; InputError (one line)
// for any other name, and for CUDA when this build has no CUDA or no GPU is visible.
c10::Device parse_audit_device(const std::string& name);

// Moves `target` to the device `name` names (parse_audit_device) before an audit (to_device is
// called also for the device it is on: a target makes that a no-op); InputError (one line) when
// the target cannot run there.
void place_on_device(AuditTarget& target, const std::string& name);

// While alive, CUDA float32 matrix products and convolutions run in IEEE float32 (TF32 off), as
// every probe and decision of an audit on CUDA must: TF32 rounds inputs to 10 mantissa bits,
// which would read as effects. The settings before come back at the end. No effect on the CPU.
// run_causality_audit and run_model_checks hold one for their whole run.
class ExactCudaMath : NonCopyable {
 public:
  ExactCudaMath();
  ~ExactCudaMath();

 private:
  bool cublas_, cudnn_;
};

// target.to_dtype, recorded as a conversion in the running audit's cost (audit/audit_cost.h).
inline bool convert_counted(AuditTarget& target, at::ScalarType dtype, std::string* why) {
  record_conversion();
  return target.to_dtype(dtype, why);
}

}  // namespace grassaudit
