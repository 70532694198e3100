#pragma once
// An append-only log of one record per line (metrics.jsonl). Every line is flushed as it is
// written and a failed write (full disk, file gone read-only) is an error naming the file, not
// a silently shorter log.
#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace grassaudit {

class JsonlLog {
 public:
  // Opens `path` for appending (created if missing), or emptied first when !append. InputError
  // if it cannot be opened.
  explicit JsonlLog(std::string path, bool append = true);
  // Appends `line` (no newline inside) and a newline, flushed. InputError on failure.
  void write(const std::string& line);
  void write_record(const nlohmann::json& record);  // one record, dumped on one line

 private:
  std::string path_;
  std::ofstream out_;
};

// For a resumed run: keeps the records of a metrics log with "step" <= step (the checkpoint
// it continues from), drops "split": "test" records (the final test figure is recomputed) and
// torn lines of a killed writer; rewrites the file atomically. A missing file is left missing.
void truncate_metrics_after(const std::string& path, int64_t step);

}  // namespace grassaudit
