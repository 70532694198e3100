#pragma once
// Section (a): the WikiText-2 table. Paper rows, then reproduction rows, then our LM runs (runs
// that differ only by seed as one row: mean ± sample std). Each row carries the settings that
// limit its number: tokenizer, text variant, L, depth, width, epochs and seeds.
#include <string>
#include <vector>

#include "report/published.h"
#include "report/runs.h"

namespace grassaudit {

enum class RowOrigin { kPaper, kReproduction, kOurs };

struct WikiRow {
  RowOrigin origin = RowOrigin::kPaper;
  std::string run;  // our run's name (the first member's for a seed group); empty for published rows
  // Cells, in column order.
  std::string source, mixer, pairing, tokenizer, text, seq_len, layers, d_model, params, budget,
      seeds, valid_ppl, audit;
};

// Column headers, in the order of WikiRow's cells.
std::vector<std::string> wikitext_header();
std::vector<WikiRow> wikitext_rows(const Published& pub, const std::vector<RunRecord>& runs);
std::string render_wikitext_table(const std::vector<WikiRow>& rows);

}  // namespace grassaudit
