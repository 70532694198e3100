#include "runtime/pickle_guard.h"

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include "util/error.h"
#include "util/pickle_scan.h"

namespace grassaudit {

void check_archive_pickles(const std::string& path, const std::string& what) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  std::vector<std::string> records;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    records = reader->getAllRecords();
  } catch (const std::exception&) {
    return;  // not an archive LibTorch reads: its loader says so
  }
  for (const auto& name : records) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".pkl") != 0) continue;
    std::string problem;
    try {
      const auto [data, size] = reader->getRecord(name);
      problem = pickle_out_of_range(static_cast<const unsigned char*>(data.get()), size);
    } catch (const std::exception&) {
      continue;  // a record that does not read: the loader says so
    }
    if (!problem.empty()) throw InputError(fmt::format("{}: {} ({}: {})", path, what, name, problem));
  }
}

}  // namespace grassaudit
