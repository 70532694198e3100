#include "report/figures/gnuplot_script.h"

#include <fmt/format.h>

namespace grassaudit {

std::string gnuplot_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string both_terminals(const std::string& stem, const std::string& body, int width, int height) {
  std::string out;
  out += "reset\n";
  out += fmt::format("set terminal pngcairo size {},{} font 'DejaVu Sans,10' noenhanced\n", width, height);
  out += "set output " + gnuplot_quote("out/" + stem + ".png") + "\n" + body + "unset output\n";
  out += "reset\n";
  out += fmt::format("set terminal svg size {},{} font 'DejaVu Sans,10' noenhanced\n", width, height);
  out += "set output " + gnuplot_quote("out/" + stem + ".svg") + "\n" + body + "unset output\n";
  return out;
}

}  // namespace grassaudit
