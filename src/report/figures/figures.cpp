#include "report/figures/figures.h"

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "report/figures/gnuplot.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/non_copyable.h"

namespace grassaudit {
namespace {

namespace fs = std::filesystem;

// A temporary folder removed on scope exit.
class TempDir : NonCopyable {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "grassaudit-report-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary folder");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

bool ours(const std::string& name) {
  const fs::path p(name);
  const std::string ext = p.extension().string();
  if (ext != ".png" && ext != ".svg") return false;
  const std::string stem = p.stem().string();
  return stem == "ppl" || stem == "train-loss" || stem == "bench" ||
         stem.rfind("leakmap-", 0) == 0;
}

void remove_stale(const fs::path& dir, const std::set<std::string>& keep) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file(ec) && ours(name) && !keep.count(name)) stale.push_back(e.path());
  }
  for (const auto& p : stale) fs::remove(p, ec);
}

}  // namespace

std::map<std::string, std::string> draw_pictures(const FigurePlan& plan, const std::string& gnuplot) {
  TempDir tmp;
  fs::create_directories(tmp.path() / "data");
  fs::create_directories(tmp.path() / "out");
  for (const auto& [name, contents] : plan.data_files) write_file_atomic((tmp.path() / "data" / name).string(), contents);
  write_file_atomic((tmp.path() / "figures.gp").string(), plan.script);
  run_gnuplot(gnuplot, tmp.path().string(), "figures.gp");
  std::map<std::string, std::string> out;
  for (const auto& f : plan.figures)
    for (const char* ext : {".png", ".svg"}) out[f.stem + ext] = read_file((tmp.path() / "out" / (f.stem + ext)).string());
  return out;
}

FigureResult render_figures(const FigurePlan& plan, const std::string& out_dir,
                            const std::string& gnuplot) {
  FigureResult result;
  const fs::path fig_dir = fs::path(out_dir) / "figures";
  std::error_code ec;
  fs::create_directories(fig_dir, ec);
  if (ec) throw InputError("cannot create " + fig_dir.string() + ": " + ec.message());

  if (plan.figures.empty()) {
    result.rendered = true;
    remove_stale(fig_dir, {});
    return result;
  }
  if (!find_program(gnuplot)) {
    result.note = "Figures were not generated: gnuplot (`" + gnuplot +
                  "`) was not found. Install gnuplot and rerun `grassaudit report`.";
    return result;
  }

  std::set<std::string> keep;
  for (const auto& [name, bytes] : draw_pictures(plan, gnuplot)) {
    write_file_atomic((fig_dir / name).string(), bytes);
    keep.insert(name);
  }
  remove_stale(fig_dir, keep);
  result.figures = plan.figures;
  result.rendered = true;
  return result;
}

}  // namespace grassaudit
