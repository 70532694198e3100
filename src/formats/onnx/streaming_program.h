#pragma once
// A streaming model run as one sequence model: the graph is one step (x_chunk, state...) ->
// (y, state'...), the shape of streaming speech and voice-activity models; a sequence is fed
// chunk by chunk with each state carried from the output that returns its next value (--state
// IN=OUT), from zeros or --state-init. The audit sees the whole sequence: the chunks' outputs
// side by side along time, so a step whose output reads a later frame of its own chunk (an
// output computed from the new state, say) is a leak like any other.
//
// Time: an input declared with a frame axis at --time-axis ([B, n, C] features, [B, n] ids) is
// fed n frames per call (n its static size there, 4 when that size is dynamic; the last chunk
// padded with zeros, its padding's outputs dropped), and each output with n frames there keeps
// them; an input declared without one ([B, F] features: one chunk of F samples, [B] ids) is one
// time step per call, and each output is one step. Other inputs are held (--input NAME=const:V,
// ones, zeros).
#include <memory>
#include <string>
#include <vector>

#include "formats/graph/graph_program.h"
#include "audit/model_signature.h"
#include "formats/onnx/onnx_program.h"
#include "formats/onnx/onnx_target.h"

namespace grassaudit::onnx_rt {

class StreamingProgram : public GraphProgram {
 public:
  // InputError, one line, when a --state names no input or output of the graph, a state's shape
  // has a dynamic dimension other than the batch (with no --state-init), or the inputs bound to
  // time have no usable frame axis.
  StreamingProgram(std::unique_ptr<OnnxProgram> step, const StreamingOptions& options,
                   const std::vector<InputBinding>& bindings, int64_t time_axis);

  const std::vector<GraphInput>& inputs() const override { return inputs_; }
  std::string describe() const override;
  std::string noun() const override { return "an ONNX streaming graph"; }
  std::string why_no_units() const override {
    return "a streaming ONNX graph sees one chunk per call, so its units see no whole sequence";
  }
  c10::IValue run(const std::vector<at::Tensor>& user_inputs) override;
  NamedTensors& parameters() override { return step_->parameters(); }
  NamedTensors& buffers() override { return step_->buffers(); }
  NamedTensors& constants() override { return step_->constants(); }
  int promote_dtype_arguments(bool on) override { return step_->promote_dtype_arguments(on); }
  std::string first_random_node() const override { return step_->first_random_node(); }
  std::vector<std::string> op_census() const override { return step_->op_census(); }

 private:
  struct State {
    size_t input = 0, output = 0;  // indices into the step's inputs and outputs
    at::Tensor init;               // from --state-init, or undefined (zeros)
  };
  at::Tensor initial_state(const State& s, int64_t batch) const;

  std::unique_ptr<OnnxProgram> step_;
  std::vector<GraphInput> inputs_;     // the step's inputs less the states
  std::vector<size_t> step_index_;     // inputs_[i] is the step's input step_index_[i]
  std::vector<bool> timed_;            // inputs_[i] is fed chunk by chunk
  std::vector<State> states_;
  std::vector<size_t> outputs_;        // the step's outputs that are not states
  int64_t time_axis_ = 1;
  int64_t frames_ = 1;                 // frames per call
  bool frame_axis_ = true;             // the timed inputs have a frame axis (else one step per call)
};

}  // namespace grassaudit::onnx_rt
