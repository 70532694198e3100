#include "report/format.h"

#include <cmath>

#include <fmt/format.h>

namespace grassaudit {

std::string fmt_ppl(double ppl) { return fmt::format("{:.2f}", ppl); }

std::string fmt_shortest(double v) { return fmt::format("{}", v); }

std::string fmt_ratio(double r) { return fmt::format("{:.3f}", r); }

std::string fmt_count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f}k", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string fmt_thousands(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string fmt_epochs(double e) {
  if (e == std::floor(e) && std::fabs(e) < 1e9) return fmt::format("{:.0f}", e);
  return fmt::format("{:.2f}", e);
}

std::string fmt_percent(double fraction) { return fmt::format("{:.2f}%", fraction * 100.0); }

std::string fmt_sci(double v) { return v == 0 ? std::string("0") : fmt::format("{:.1e}", v); }

std::string fmt_offsets(const std::vector<long long>& offsets) {
  std::string out;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(offsets[i]);
  }
  return out;
}

std::string or_dash(const std::optional<long long>& v) { return v ? std::to_string(*v) : "?"; }

std::string quarantined_cell(double ppl, const std::optional<long long>& horizon) {
  return quarantined_text(fmt_ppl(ppl), horizon);
}

std::string quarantined_text(const std::string& value, const std::optional<long long>& horizon) {
  std::string out = "~~" + value + "~~ QUARANTINED (LEAKY";
  if (horizon) out += ", horizon " + std::to_string(*horizon);
  return out + ")";
}

std::string md_cell(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string file_stem(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

std::string MdTable::render() const {
  std::string out = "|";
  for (const auto& h : header) out += " " + md_cell(h) + " |";
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (size_t i = 0; i < header.size(); ++i) {
      out += " " + (i < row.size() ? md_cell(row[i]) : std::string()) + " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace grassaudit
