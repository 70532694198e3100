#pragma once
// Pieces of the gnuplot scripts the report writes (report/figure_plan.h, report/figures/leak_map_figure.h).
#include <string>

namespace grassaudit {

// A gnuplot single-quoted string: no escapes, a quote is doubled.
std::string gnuplot_quote(const std::string& s);

// `body` once per terminal (pngcairo, svg; fixed fonts and sizes: the same bytes for the same
// data); each output lands in out/<stem>.{png,svg}.
std::string both_terminals(const std::string& stem, const std::string& body, int width, int height);

}  // namespace grassaudit
