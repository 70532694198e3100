#include "report/sources_table.h"

#include "report/format.h"
#include "report/limitations.h"

namespace grassaudit {
namespace {

std::string file_cell(const std::string& repository, const std::string& url, const Citation& c) {
  const std::string at = " at `" + c.commit.substr(0, 12) + "`";
  if (url.empty()) return repository + ": " + c.path + at;
  return "[" + repository + ": " + c.path + "](" + url + "/blob/" + c.commit + "/" + c.path + ")" + at;
}

}  // namespace

std::string render_sources_table(const Published& pub) {
  MdTable t;
  t.header = {"reproduction", "fields", "file, commit", "what it says"};
  for (const auto& r : pub.repro_lm) {
    for (const auto& c : r.citations) {
      t.rows.push_back({r.name, join_list(c.fields, ", "), file_cell(r.repository, r.url, c), c.says});
    }
  }
  for (const auto& n : pub.repro_snli) {
    for (const auto& c : n.citations) {
      t.rows.push_back({n.name + " (SNLI)", join_list(c.fields, ", "),
                        file_cell(n.repository, n.url, c), c.says});
    }
  }
  return t.rows.empty() ? std::string() : t.render();
}

}  // namespace grassaudit
