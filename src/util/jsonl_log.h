#pragma once
// An append-only log of one record per line (metrics.jsonl). Every record is written whole with
// one write(2) as it comes; a failed write (full disk, file gone read-only) is an error naming
// the file, not a silently shorter log. sync() makes the records durable; a checkpoint saves the
// log's extent (records and bytes) after a sync, and a resume restores the log to exactly that.
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "util/non_copyable.h"

namespace grassaudit {

// How much of a log a checkpoint saw: its complete records and their bytes.
struct LogExtent {
  int64_t records = 0;
  int64_t bytes = 0;
};

class JsonlLog : NonCopyable {
 public:
  // Opens `path` for appending (created if missing), or emptied first when !append. InputError
  // if it cannot be opened.
  explicit JsonlLog(std::string path, bool append = true);
  ~JsonlLog();

  // Appends `line` (no newline inside) and a newline. InputError on failure.
  void write(const std::string& line);
  void write_record(const nlohmann::json& record);  // one record, dumped on one line
  // fsync, when anything was appended since the last one.
  void sync();
  LogExtent extent() const { return extent_; }

 private:
  std::string path_;
  int fd_ = -1;
  LogExtent extent_;
  int64_t synced_bytes_ = 0;
  bool folder_synced_ = false;
};

// A resumed run's log restored to what its checkpoint counted: the first extent.bytes bytes must
// hold exactly extent.records intact records (else InputError naming the file and line: records
// the checkpoint saw are lost or damaged, which no resume can regenerate); what follows (records
// written after the checkpoint, a torn last line of a killed writer) is cut. A missing log (the
// checkpoint resumed into another folder) starts anew. Returns a one-line note of what was cut
// or started ("" when nothing). `checkpoint` names the file for messages.
std::string restore_log(const std::string& path, const LogExtent& extent, const std::string& checkpoint);

// The rule for checkpoints that carry no extent: keeps the records with "step" <= step, drops
// "split": "test" records (the final test figure is recomputed), rewrites the file atomically.
// A torn last line is cut (the returned note says so); a damaged line anywhere else is an
// InputError naming the file and line. A missing file is left missing.
std::string truncate_metrics_after(const std::string& path, int64_t step);

}  // namespace grassaudit
