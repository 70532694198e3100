#pragma once
// Audit target for a user's TorchScript model, seen through its model signature
// (audit/model_signature.h): forward's arguments bound to --input values, time at --time-axis,
// and one output leaf selected at a time (select_output; "" = a one-tensor output).
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "audit/dtype_twins.h"
#include "audit/model_file_target.h"
#include "audit/unit_probe.h"
#include "formats/placed_target.h"
#include "formats/tracked_state.h"

namespace torch::jit {
struct Module;
}

namespace grassaudit {

// The module in the TorchScript file at `path`, with the ops PyTorch 2.x files call registered.
// InputError, one line naming the path, when it is missing, not TorchScript (the loader's
// explanation: a torch.save file, not a zip, a damaged archive) or has no forward.
std::unique_ptr<torch::jit::Module> load_torchscript_module(const std::string& path);

class TorchScriptUnits;

class TorchScriptTarget : public PlacedTarget<ModelFileTarget>, public UnitProbe {
 public:
  // InputError when the file is missing, not TorchScript, has no forward, or its arguments do
  // not take `inputs` (ModelSignature).
  TorchScriptTarget(const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis = 1,
                    double feature_scale = 1.0);
  // One unnamed input: --input tokens:V or features:C, time at 1.
  TorchScriptTarget(const std::string& path, const InputSpec& input);
  ~TorchScriptTarget() override;
  std::string describe() const override;
  at::Tensor forward(const at::Tensor& x) override;
  bool to_device(const c10::Device& device, std::string* why) override;
  void set_train(bool train) override;
  bool is_training() const override;
  bool to_dtype(at::ScalarType dtype, std::string* why) override;
  // A second copy of the file with its graphs' float32 constants and dtype arguments promoted;
  // float64 then runs that copy (a traced model with baked float32 constants), the own dtype the original.
  bool promote_float32_constants(std::string* what) override;
  std::string weights_hash() override;
  // forward's inlined graph read once (audit/train_mode_proof.h); the promoted float64 copy runs the same code.
  std::optional<TrainModeProof> train_mode_proof() override;
  // The parameters of the module forward runs now (the promoted copy in float64, if made).
  std::vector<at::Tensor> jitter_parameters() override;
  // The incremental API (formats/torchscript/incremental_api.h): init_state and step of the module forward runs.
  std::string incremental_missing() override;
  std::unique_ptr<IncrementalRun> start_incremental(int64_t batch) override;
  void snapshot_state(bool restore) override;
  std::string changed_state() override;
  void restore_state() override;
  void end_state_tracking() override;
  void hold_state(bool hold) override;
  // In the module as loaded and in the promoted float64 copy, if one was made.
  bool supports_structural_pass() const override { return true; }
  std::vector<RedrawnTensor> redraw_zero_parameters(uint64_t seed) override;
  void restore_redrawn_parameters() override;

  // Where a leak enters (formats/torchscript/torchscript_units.h): the submodules forward calls,
  // by path; the root's values are the engine's own, its input and the audited output leaf.
  UnitProbe* unit_probe() override;
  std::string why_no_units() const override { return no_units_; }
  const std::vector<ProbeUnit>& units() override;
  std::vector<UnitValues> run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) override;

  const char* format() const override { return "torchscript"; }
  const ModelSignature& signature() const override { return signature_; }
  // The output leaves at length L (one eval-mode pass of two random rows, no gradients).
  std::vector<OutputLeaf> output_leaves(int64_t L) override;
  // The leaf forward() returns from now on.
  void select_output(const std::string& path) override { output_path_ = path; }
  const std::string& selected_output() const override { return output_path_; }

 private:
  c10::IValue call(const at::Tensor& x);
  // The instrumented copy of the module forward runs now (made again when that module changes).
  TorchScriptUnits& unit_copy();
  // The recorded state: dotted attribute name -> value (tensors cloned; int, float, bool, str).
  TrackedState<c10::IValue> state_;
  std::string path_;
  std::unique_ptr<torch::jit::Module> module_;
  std::unique_ptr<torch::jit::Module> module64_;  // promoted copy (promote_float32_constants)
  DtypeTwins twins_;                              // module_'s tensors in the other dtype
  torch::jit::Module* active_ = nullptr;          // the module forward runs: module_ or module64_
  ModelSignature signature_;
  std::string output_path_;
  std::optional<TrainModeProof> train_proof_;
  std::unique_ptr<TorchScriptUnits> units_;  // unit_copy
  std::vector<ProbeUnit> unit_list_;          // the units, as the first copy found them
  std::string no_units_ = "the module's forward could not be instrumented";
  // What the structural pass redrew: name and the zeros it held (restore_redrawn_parameters).
  std::vector<std::pair<std::string, at::Tensor>> redrawn_;
  at::ScalarType own_dtype_ = at::kFloat;
};

}  // namespace grassaudit
