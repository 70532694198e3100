#pragma once
// Fixed number formats and Markdown tables, so the report is byte-identical run to run.
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

std::string fmt_ppl(double ppl);              // "12.30" (two decimals)
std::string fmt_shortest(double v);           // shortest round-trip form: "248.4", "190.03"
std::string fmt_ratio(double r);              // "1.110"
std::string fmt_count(double n);              // 12607168 -> "12.61M", 2400000 -> "2.40M", 950 -> "950"
std::string fmt_thousands(long long n);      // 550152 -> "550,152"
std::string fmt_epochs(double e);             // 1 -> "1", 0.5 -> "0.50"
std::string fmt_percent(double fraction);     // 0.8545 -> "85.45%"
std::string fmt_sci(double v);                // "3.1e-08"
std::string fmt_offsets(const std::vector<long long>& offsets);  // "1,2,4,8,12,16"
std::string or_dash(const std::optional<long long>& v);          // "128" or "?"

// The only way a leaky run's perplexity is ever printed:
// "~~12.30~~ QUARANTINED (LEAKY, horizon 43)".
std::string quarantined_cell(double ppl, const std::optional<long long>& horizon);
// The same for an already formatted value, e.g. a mean over seeds: "~~2.66 ± 0.01 (n=3)~~ ...".
std::string quarantined_text(const std::string& value, const std::optional<long long>& horizon);

// Escapes '|' and turns newlines into spaces, for a Markdown table cell.
std::string md_cell(const std::string& text);

// Safe file-name stem: [A-Za-z0-9._-] kept, everything else '_'.
std::string file_stem(const std::string& name);

struct MdTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // cells are escaped by render()
  std::string render() const;
};

}  // namespace grassaudit
