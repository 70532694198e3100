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

}  // namespace grassaudit::testing
