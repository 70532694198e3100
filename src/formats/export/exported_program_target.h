#pragma once
// Audit target for a torch.export archive (.pt2): the graph interpreter of
// formats/export/exported_program.h seen through GraphProgramTarget.
#include <memory>
#include <string>
#include <vector>

#include "formats/export/exported_program.h"
#include "formats/graph/graph_program_target.h"

namespace grassaudit {

// The archive at `path` as a graph; InputError, one line naming the path, when it cannot be read.
std::unique_ptr<GraphProgram> load_export_archive(const std::string& path);

class ExportedProgramTarget : public GraphProgramTarget {
 public:
  // InputError (one line naming the path) when the archive cannot be read or run, or its
  // arguments do not take `inputs`.
  ExportedProgramTarget(const std::string& path, const std::vector<InputBinding>& inputs, int64_t time_axis = 1,
                        double feature_scale = 1.0);

  ExportedProgram& program() { return static_cast<ExportedProgram&>(graph()); }
};

}  // namespace grassaudit
