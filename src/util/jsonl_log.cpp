#include "util/jsonl_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/write_points.h"

namespace grassaudit {
namespace {

// The lines of `text`, each with whether a newline ended it (only the last one can lack it).
struct Line {
  std::string text;
  bool complete = true;
};

std::vector<Line> split_lines(const std::string& text) {
  std::vector<Line> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) {
      lines.push_back({text.substr(at), false});
      break;
    }
    lines.push_back({text.substr(at, nl - at), true});
    at = nl + 1;
  }
  return lines;
}

bool parses(const std::string& line) {
  return !line.empty() && nlohmann::json::accept(line);
}

std::string damaged(const std::string& path, size_t line_no, const std::string& line) {
  return path + ":" + std::to_string(line_no) + ": damaged record (not one JSON object): '" + line.substr(0, 60) +
         (line.size() > 60 ? "...'" : "'");
}

}  // namespace

JsonlLog::JsonlLog(std::string path, bool append) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (append ? 0 : O_TRUNC), 0644);
  if (fd_ < 0) throw InputError("cannot open " + path_ + " for appending: " + std::strerror(errno));
  struct stat st {};
  if (append && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    const std::string text = read_file(path_);
    extent_.bytes = static_cast<int64_t>(text.size());
    for (char c : text) extent_.records += c == '\n';
  }
  synced_bytes_ = extent_.bytes;
}

JsonlLog::~JsonlLog() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlLog::write(const std::string& line) {
  if (line.find('\n') != std::string::npos) throw std::logic_error("JsonlLog: a record spans lines");
  const std::string record = line + '\n';
  write_point(WritePoint::kAppend, path_);
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      throw InputError("cannot write to " + path_ + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  extent_.bytes += static_cast<int64_t>(record.size());
  extent_.records += 1;
}

void JsonlLog::write_record(const nlohmann::json& record) { write(record.dump()); }

void JsonlLog::sync() {
  if (synced_bytes_ == extent_.bytes) return;
  write_point(WritePoint::kFsync, path_);
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS)  // EINVAL: /dev/null (a rank that writes nothing)
    throw InputError("cannot sync " + path_ + ": " + std::strerror(errno));
  synced_bytes_ = extent_.bytes;
  // The first sync also makes the log's folder entry durable: a log created by this process
  // must not vanish in a power loss while a checkpoint that counts its records survives.
  struct stat st {};
  if (!folder_synced_ && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) fsync_dir(parent_dir_of(path_));
  folder_synced_ = true;
}

std::string restore_log(const std::string& path, const LogExtent& extent, const std::string& checkpoint) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    // A checkpoint resumed into another folder (or copied there): a new log starts here.
    if (extent.bytes == 0) return "";
    return path + " is missing (" + checkpoint + " was taken when its log held " + std::to_string(extent.records) +
           " records): a new log starts at the checkpoint";
  }
  const std::string text = read_file(path);
  const auto size = static_cast<int64_t>(text.size());
  if (size < extent.bytes)
    throw InputError("cannot resume: " + path + " holds " + std::to_string(size) + " bytes, but " + checkpoint +
                     " was taken when it held " + std::to_string(extent.bytes) + " (" + std::to_string(extent.records) +
                     " records): records the checkpoint counts are lost; restore the file or start a new run");
  const std::vector<Line> kept = split_lines(text.substr(0, static_cast<size_t>(extent.bytes)));
  for (size_t i = 0; i < kept.size(); ++i)
    if (!kept[i].complete || !parses(kept[i].text))
      throw InputError("cannot resume: " + damaged(path, i + 1, kept[i].text));
  if (static_cast<int64_t>(kept.size()) != extent.records)
    throw InputError("cannot resume: the first " + std::to_string(extent.bytes) + " bytes of " + path + " hold " +
                     std::to_string(kept.size()) + " records, but " + checkpoint + " counted " +
                     std::to_string(extent.records) + " there; the log is not the one this checkpoint wrote");
  if (size == extent.bytes) return "";
  const std::vector<Line> cut = split_lines(text.substr(static_cast<size_t>(extent.bytes)));
  const bool torn = !cut.empty() && (!cut.back().complete || !parses(cut.back().text));
  const size_t whole = cut.size() - (torn ? 1 : 0);
  write_point(WritePoint::kTruncate, path);
  if (::truncate(path.c_str(), static_cast<off_t>(extent.bytes)) != 0)
    throw InputError("cannot cut " + path + " back to its checkpoint: " + std::strerror(errno));
  fsync_file(path);
  std::string note = path + ": cut " + std::to_string(whole) + " record(s) written after the checkpoint";
  if (torn) note += " and a torn last line (a write cut short by a kill)";
  return note + "; they are recomputed";
}

std::string truncate_metrics_after(const std::string& path, int64_t step) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  const std::vector<Line> lines = split_lines(read_file(path));
  std::ostringstream kept;
  std::string note;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& line = lines[i];
    if (line.text.empty() && line.complete) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line.text);
    } catch (const nlohmann::json::exception&) {
      if (i + 1 == lines.size()) {  // a torn last line from a killed writer
        note = path + ": cut a torn last line (a write cut short by a kill)";
        continue;
      }
      throw InputError("cannot resume: " + damaged(path, i + 1, line.text));
    }
    if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step) continue;
    if (j.value("split", "") == "test") continue;
    kept << line.text << "\n";
  }
  write_file_atomic(path, kept.str());
  return note;
}

}  // namespace grassaudit
