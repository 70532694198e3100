#include "formats/export/exported_program_target.h"

#include <fmt/format.h>

#include "formats/export/export_graph.h"  // namespace exported, which the folder's files use

#include "util/error.h"
#include "util/error_text.h"

namespace grassaudit {
using namespace exported;  // as the folder's other files, which a unity batch joins to this one

std::unique_ptr<GraphProgram> load_export_archive(const std::string& path) {
  try {
    return ExportedProgram::load(path);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: torch.export archive: {}", path, e.what()));
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: torch.export archive: {}", path, first_meaningful_line(e.what_without_backtrace())));
  }
}

ExportedProgramTarget::ExportedProgramTarget(const std::string& path, const std::vector<InputBinding>& inputs,
                                             int64_t time_axis, double feature_scale)
    : GraphProgramTarget("torch.export", path, load_export_archive(path), inputs, time_axis, feature_scale) {}

}  // namespace grassaudit
