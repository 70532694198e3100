#include "report/citations.h"

#include <algorithm>
#include <set>

#include "report/json_io.h"
#include "util/error.h"

namespace grassaudit {
namespace {

using nlohmann::json;

bool is_commit(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string join(const std::vector<std::string>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + xs[i];
  return out;
}

}  // namespace

std::vector<std::string> stated_fields(const json& obj, const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  for (const auto& k : candidates) {
    if (obj.is_object() && obj.contains(k) && !obj.at(k).is_null()) out.push_back(k);
  }
  return out;
}

std::vector<Citation> read_citations(const json& row, const std::string& where,
                                     const std::vector<std::string>& known,
                                     const std::vector<std::string>& stated) {
  std::vector<Citation> out;
  const std::set<std::string> known_set(known.begin(), known.end());
  std::set<std::string> cited;
  if (row.contains("citations") && !row.at("citations").is_null()) {
    const json& arr = row.at("citations");
    if (!arr.is_array()) throw InputError(where + ": 'citations' must be an array");
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string w = where + " (citations[" + std::to_string(i) + "])";
      require_object(arr[i], w);
      Citation c;
      c.path = req_string(arr[i], "path", w);
      c.commit = req_string(arr[i], "commit", w);
      c.says = req_string(arr[i], "says", w);
      if (c.path.empty() || c.says.empty()) throw InputError(w + ": 'path' and 'says' must not be empty");
      if (!is_commit(c.commit)) {
        throw InputError(w + ": 'commit' must be 40 lower-case hex digits, got \"" + c.commit + "\"");
      }
      if (!arr[i].contains("fields") || !arr[i].at("fields").is_array() || arr[i].at("fields").empty()) {
        throw InputError(w + ": 'fields' must be a non-empty array of field names");
      }
      for (const auto& f : arr[i].at("fields")) {
        if (!f.is_string()) throw InputError(w + ": 'fields' must hold strings");
        const std::string name = f.get<std::string>();
        if (!known_set.count(name)) {
          throw InputError(w + ": cites unknown field '" + name + "' (known: " + join(known) + ")");
        }
        c.fields.push_back(name);
        cited.insert(name);
      }
      out.push_back(std::move(c));
    }
  }
  std::vector<std::string> uncited;
  for (const auto& f : stated) {
    if (!cited.count(f)) uncited.push_back(f);
  }
  if (!uncited.empty()) {
    throw InputError(where + ": stated but not cited (give the file and commit it was read from): " +
                     join(uncited));
  }
  return out;
}

}  // namespace grassaudit
