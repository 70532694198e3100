#include "report_test_util.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace grassaudit::testing {

ScratchDir::ScratchDir() {
  std::string tmpl = (fs::temp_directory_path() / "grassaudit-report-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

ReportOptions fixture_options(const fs::path& out) {
  ReportOptions o;
  o.runs_dir = (fixtures_dir() / "runs").string();
  o.bench_dir = (fixtures_dir() / "bench").string();
  o.reference_dir = (source_dir() / "reference").string();
  o.out_dir = out.string();
  return o;
}

void copy_fixture_runs(const fs::path& dest) {
  fs::create_directories(dest);
  fs::copy(fixtures_dir() / "runs", dest, fs::copy_options::recursive);
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> tree_contents(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), root).string()] = read_text(e.path());
  }
  return out;
}

std::vector<std::string> row_cells(const std::string& md, const std::string& first_cell) {
  std::istringstream in(md);
  std::string line;
  const std::string prefix = "| " + first_cell + " |";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::vector<std::string> cells;
    size_t pos = 1;
    while (pos < line.size()) {
      size_t end = line.find(" |", pos);
      while (end != std::string::npos && end > 0 && line[end - 1] == '\\') {
        end = line.find(" |", end + 1);
      }
      if (end == std::string::npos) break;
      std::string cell = line.substr(pos, end - pos);
      if (!cell.empty() && cell[0] == ' ') cell.erase(0, 1);
      cells.push_back(cell);
      pos = end + 2;
    }
    return cells;
  }
  return {};
}

std::string section(const std::string& md, const std::string& from) {
  const size_t start = md.find(from);
  if (start == std::string::npos) return "";
  const size_t end = md.find("\n## ", start + from.size());
  return md.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace grassaudit::testing
