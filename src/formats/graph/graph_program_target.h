#pragma once
// Audit target for a model file that is one fixed graph (formats/graph/graph_program.h: a torch.export
// archive, an ONNX model), seen through the model signature like a TorchScript file: the graph's
// tensor inputs bound to --input values (in order or by name), time at --time-axis, the outputs as
// the tensor, tuple, list or dict the graph returns.
//
// What the file fixes, the target keeps: the graph is fixed, so train() and eval() change nothing
// (dropout nodes run as exported, reseeded per pass by the audit; a note says so); the sequence
// lengths it declares (static, or the range of a dynamic dimension) are the only ones the audit
// runs (seq_len_range); a batch outside its declared batch sizes runs in calls inside them
// (forward splits and pads, a note says so).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/graph/graph_program.h"
#include "audit/dtype_twins.h"
#include "audit/model_file_target.h"
#include "formats/placed_target.h"
#include "formats/tracked_state.h"

namespace grassaudit {

class GraphProgramTarget : public PlacedTarget<ModelFileTarget>, public UnitProbe {
 public:
  // `format`: the JSON's format ("torch.export", "onnx"). InputError (one line naming the path)
  // when the graph's arguments do not take `inputs`.
  GraphProgramTarget(const char* format, const std::string& path, std::unique_ptr<GraphProgram> program,
                     const std::vector<InputBinding>& inputs, int64_t time_axis = 1, double feature_scale = 1.0);
  ~GraphProgramTarget() override;

  const char* format() const override { return format_; }
  std::string describe() const override;
  at::Tensor forward(const at::Tensor& x) override;
  void set_train(bool train) override { training_ = train; }
  bool is_training() const override { return training_; }
  bool to_dtype(at::ScalarType dtype, std::string* why) override;
  // The graph's float32 dtype arguments read as float64 while the target runs in float64.
  bool promote_float32_constants(std::string* what) override;
  std::string weights_hash() override;
  // Proven unless a node draws random numbers: the graph is the same in both modes.
  std::optional<TrainModeProof> train_mode_proof() override;
  std::vector<at::Tensor> jitter_parameters() override;
  // The structural pass over the graph signature's parameters (audit/zero_redraw.h).
  bool supports_structural_pass() const override { return true; }
  std::vector<RedrawnTensor> redraw_zero_parameters(uint64_t seed) override;
  void restore_redrawn_parameters() override;
  void snapshot_state(bool restore) override;
  std::string changed_state() override;
  void restore_state() override;
  void end_state_tracking() override;
  void hold_state(bool hold) override;

  const ModelSignature& signature() const override { return signature_; }
  std::vector<OutputLeaf> output_leaves(int64_t L) override;
  void select_output(const std::string& path) override { output_path_ = path; }
  const std::string& selected_output() const override { return output_path_; }
  DeclaredRange seq_len_range() const override { return len_range_; }
  DeclaredRange batch_range() const override { return batch_range_; }
  std::vector<std::string> notes() const override;

  // Where a leak enters: the graph's units (its module groups and op nodes), where the program
  // offers them; recorded in one call of the graph (so only at a batch size the file runs).
  UnitProbe* unit_probe() override;
  std::string why_no_units() const override;
  const std::vector<ProbeUnit>& units() override { return program_->units(); }
  std::vector<UnitValues> run(const at::Tensor& x, const UnitTensors& fed, const UnitTensors& held) override;

  // The interpreter, for tests (outputs compared with PyTorch's, the op census).
  GraphProgram& graph() { return *program_; }
  // One call of the graph on the canonical input x (no batch splitting).
  c10::IValue call(const at::Tensor& x);

 private:
  // The graph's user inputs, in its order, from the canonical input x.
  std::vector<at::Tensor> graph_arguments(const at::Tensor& x);
  // f() with what fails named as call() names it.
  template <class F>
  c10::IValue named_call(const at::Tensor& x, F f);

 protected:
  const char* format_;
  std::string path_;
  std::unique_ptr<GraphProgram> program_;

 private:
  ModelSignature signature_;
  std::string output_path_;
  bool training_ = false;
  at::ScalarType own_dtype_ = at::kFloat;
  bool promoted_ = false;
  DtypeTwins twins_;  // the program's tensors in the other dtype (to_dtype)
  DeclaredRange len_range_, batch_range_;
  TrackedState<at::Tensor> state_;  // recorded buffers (snapshot_state)
  std::vector<std::pair<std::string, at::Tensor>> redrawn_;  // the zeros the structural pass set aside
};

}  // namespace grassaudit
