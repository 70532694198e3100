#pragma once
// The precision floor's random directions, drawn faster and the same: standard normal tensors
// shaped like each parameter, one after another from one generator.
#include <cstdint>
#include <vector>

namespace at {
class Tensor;
struct Generator;
}  // namespace at

namespace grassaudit {

// like [i]: any tensors -> out[i] = at::randn(like[i].sizes(), gen, like[i]'s dtype, on the CPU),
// drawn in turn, and `gen` left where those draws leave it: the same values and the same state
// as the plain loop. With a large float64 part at the front the draws run on two threads (the
// second from a copy of `gen` advanced past the first part's draws, checked against where the
// first part really ended; drawn again from there on a mismatch), so the values never depend on
// how ATen draws, only the time does.
struct DirectionDraws {
  std::vector<at::Tensor> directions;
  bool two_threads = false;     // the split ran
  bool second_redrawn = false;  // and its second part started elsewhere, so it was drawn again
};
// `misprediction`: words added to the predicted count (tests: the redraw path).
DirectionDraws draw_directions(at::Generator& gen, const std::vector<at::Tensor>& like, int64_t misprediction = 0);

}  // namespace grassaudit
