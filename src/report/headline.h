#pragma once
// The headline: for the largest language-model setting the runs hold (most parameters; its
// tokenizer, length, width and depth), the longest run of each mixer (most tokens seen), with its
// audit and perplexities. reports/README.md opens with it and scripts/regenerate-reports.sh copies
// the same block into the top README.md, between the markers below, so the front page shows the
// report's numbers and a test fails when the two differ.
#include <string>
#include <vector>

#include "report/runs.h"

namespace grassaudit {

constexpr const char* kHeadlineBegin = "<!-- report-headline:begin -->";
constexpr const char* kHeadlineEnd = "<!-- report-headline:end -->";

// The block, markers included ("" when no LM run has an audit).
std::string render_headline(const std::vector<RunRecord>& runs);

// The block of `markdown` between the markers, markers included ("" when absent).
std::string headline_block(const std::string& markdown);

// `page` with its headline block replaced by `block`; InputError when the page has no block.
std::string with_headline(const std::string& page, const std::string& block);

}  // namespace grassaudit
