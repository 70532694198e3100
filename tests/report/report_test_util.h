#pragma once
// Helpers shared by the report tests: temporary folders, the fixture set, file comparison.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "report/report.h"

namespace grassaudit::testing {

namespace fs = std::filesystem;

inline fs::path source_dir() { return fs::path(GRASSAUDIT_SOURCE_DIR); }
inline fs::path fixtures_dir() { return source_dir() / "tests" / "report" / "fixtures"; }

// A fresh temporary folder, removed with the object.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Options pointing at the fixture runs and bench sweep, the repository's reference/ folder,
// and `out`.
ReportOptions fixture_options(const fs::path& out);

// Copies the fixture runs into `dest` (so a test can add or break artifacts).
void copy_fixture_runs(const fs::path& dest);

void write_text(const fs::path& path, const std::string& text);
std::string read_text(const fs::path& path);

// Cells of the Markdown table row of `md` whose first cell is `first_cell` (escaped "\|" kept
// inside a cell); empty when no row starts so.
std::vector<std::string> row_cells(const std::string& md, const std::string& first_cell);
// The text between heading `from` and the next "## " heading ("" when `from` is absent).
std::string section(const std::string& md, const std::string& from);

// Every regular file under `root`, relative path -> contents.
std::map<std::string, std::string> tree_contents(const fs::path& root);

}  // namespace grassaudit::testing
