// The file tables of the READMEs that document a folder list exactly the files it holds: every
// file in the folder is named by a row, and every name in the first column is a file there. A
// name is `a.cpp`, `a.h/.cpp` (both), `a.*` or `checks/*_check.cpp` (a glob with *), several per
// cell separated by commas; a folder is `name/`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The backticked names in the first column of the first table after `heading` ("" = the first
// table of the file).
std::vector<std::string> first_column(const std::string& text, const std::string& heading) {
  size_t at = heading.empty() ? 0 : text.find("\n" + heading + "\n");
  std::vector<std::string> names;
  if (at == std::string::npos) return names;
  std::istringstream in(text.substr(at));
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("|", 0) != 0) {
      if (in_table) break;
      continue;
    }
    in_table = true;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    static const std::regex code("`([^`]+)`");
    for (std::sregex_iterator m(cell.begin(), cell.end(), code), end; m != end; ++m) names.push_back((*m)[1]);
  }
  return names;
}

// `pattern` with * (any run of characters but '/') against `name`.
bool glob(const std::string& pattern, const std::string& name) {
  std::string re;
  for (char c : pattern) {
    if (c == '*') re += "[^/]*";
    else if (std::string(".^$|()[]{}+?\\").find(c) != std::string::npos) re += std::string("\\") + c;
    else re += c;
  }
  return std::regex_match(name, std::regex(re));
}

// The names a table entry stands for, as patterns: "a.h/.cpp" -> a.h, a.cpp.
std::vector<std::string> patterns(const std::string& entry) {
  const auto slash_dot = entry.find("/.");
  if (slash_dot == std::string::npos) return {entry};
  const std::string stem = entry.substr(0, entry.rfind('.', slash_dot));
  return {entry.substr(0, slash_dot), stem + entry.substr(slash_dot + 1)};
}

// The folder's files (and `sub/` folders), `sub`'s files named "sub/file" for each sub in `into`.
std::set<std::string> listing(const fs::path& dir, const std::set<std::string>& into) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == "README.md" || name == "__pycache__" || name[0] == '.') continue;
    if (e.is_directory() && into.count(name)) {
      for (const auto& f : fs::directory_iterator(e.path()))
        if (f.is_regular_file()) out.insert(name + "/" + f.path().filename().string());
    } else {
      out.insert(e.is_directory() ? name + "/" : name);
    }
  }
  return out;
}

void expect_table_is_folder(const fs::path& readme, const std::string& heading, const fs::path& dir,
                            const std::set<std::string>& into = {}, const std::set<std::string>& besides = {}) {
  SCOPED_TRACE(readme.string());
  const auto names = first_column(slurp(readme), heading);
  ASSERT_FALSE(names.empty()) << "no table" << (heading.empty() ? "" : " under " + heading);
  const auto files = listing(dir, into);
  for (const auto& file : files) {
    if (besides.count(file)) continue;
    bool named = false;
    for (const auto& n : names)
      for (const auto& p : patterns(n)) named = named || glob(p, file);
    EXPECT_TRUE(named) << file << " is in " << dir.string() << " but no row of the table names it";
  }
  for (const auto& n : names)
    for (const auto& p : patterns(n)) {
      bool exists = false;
      for (const auto& file : files) exists = exists || glob(p, file);
      EXPECT_TRUE(exists) << "the table names " << p << ", which " << dir.string() << " does not hold";
    }
}

const fs::path kRepo = GRASSAUDIT_SOURCE_DIR;

TEST(DocsTables, ScriptsReadmeListsEveryScript) {
  expect_table_is_folder(kRepo / "scripts" / "README.md", "", kRepo / "scripts");
}

TEST(DocsTables, OnnxReadmeListsEveryFile) {
  expect_table_is_folder(kRepo / "src" / "formats" / "onnx" / "README.md", "", kRepo / "src" / "formats" / "onnx");
}

TEST(DocsTables, AuditReadmeListsEveryFile) {
  expect_table_is_folder(kRepo / "src" / "audit" / "README.md", "## Files", kRepo / "src" / "audit", {"checks"});
}

TEST(DocsTables, FormatsReadmeListsEveryFile) {
  // onnx/ has its own README (tested above), one row here.
  expect_table_is_folder(kRepo / "src" / "formats" / "README.md", "## Files", kRepo / "src" / "formats",
                         {"builtin", "torch", "torchscript", "graph", "export"});
}

TEST(DocsTables, SrcReadmeListsEveryLibrary) {
  // The build's own files beside the libraries are not libraries.
  expect_table_is_folder(kRepo / "src" / "README.md", "## Folders", kRepo / "src", {},
                         {"CMakeLists.txt", "check_layers.cmake", "write_build_info.cmake"});
}

TEST(DocsTables, GlobsAndPairsExpandAsWritten) {
  EXPECT_EQ(patterns("a.h/.cpp"), (std::vector<std::string>{"a.h", "a.cpp"}));
  EXPECT_EQ(patterns("checks/*_check.cpp"), (std::vector<std::string>{"checks/*_check.cpp"}));
  EXPECT_TRUE(glob("checks/*_check.cpp", "checks/past_check.cpp"));
  EXPECT_FALSE(glob("checks/*_check.cpp", "checks/check.h"));
  EXPECT_TRUE(glob("builtin_target.*", "builtin_target.cpp"));
  EXPECT_FALSE(glob("a.*", "ab.cpp"));
}

}  // namespace
