#pragma once
// Audit target for a torch.export archive (.pt2): the graph interpreter of
// formats/export/exported_program.h seen through GraphProgramTarget.
#include <string>
#include <vector>

#include "formats/export/exported_program.h"
#include "formats/graph/graph_program_target.h"

namespace grassaudit {

class ExportedProgramTarget : public GraphProgramTarget {
 public:
  // InputError (one line naming the path) when the archive cannot be read or run, or its
  // arguments do not take `inputs`.
  ExportedProgramTarget(const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis = 1,
                        double feature_scale = 1.0);

  ExportedProgram& program() { return static_cast<ExportedProgram&>(graph()); }
};

}  // namespace grassaudit
