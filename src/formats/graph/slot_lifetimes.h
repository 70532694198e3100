#pragma once
// When a graph interpreter may drop a value: after the last step that reads it. Both graph readers
// (formats/export, formats/onnx) keep a run's values in numbered slots and release each slot after
// its last read, so a long graph holds only what later steps still need.
#include <vector>

namespace grassaudit {

// reads[i]: the slots step i reads (entries < 0 are ignored); kept: slots read after the last step
// (the graph's outputs, what a caller reads back), never released. Returns, per step, the slots
// whose last read it is, ascending.
std::vector<std::vector<int>> releases_after_last_read(int nslots, const std::vector<std::vector<int>>& reads,
                                                       const std::vector<int>& kept);

}  // namespace grassaudit
