#include "util/jsonl_log.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/atomic_file.h"
#include "util/error.h"

namespace grassaudit {

JsonlLog::JsonlLog(std::string path, bool append)
    : path_(std::move(path)), out_(path_, append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw InputError("cannot open " + path_ + " for appending: " + std::strerror(errno));
}

void JsonlLog::write(const std::string& line) {
  if (line.find('\n') != std::string::npos) throw std::logic_error("JsonlLog: a record spans lines");
  errno = 0;
  out_ << line << '\n';
  out_.flush();
  if (!out_) {
    const int err = errno;
    throw InputError("cannot write to " + path_ + ": " + (err ? std::strerror(err) : "write failed"));
  }
}

void JsonlLog::write_record(const nlohmann::json& record) { write(record.dump()); }

void truncate_metrics_after(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::ostringstream kept;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step) continue;
      if (j.value("split", "") == "test") continue;
    } catch (const nlohmann::json::exception&) {
      continue;  // a torn last line from a killed run
    }
    kept << line << "\n";
  }
  write_file_atomic(path, kept.str());
}

}  // namespace grassaudit
