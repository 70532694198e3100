#pragma once
// What a graph file (torch.export, ONNX) says about its inputs when no --input is given: each
// user input's declared dtype and shape, and the tables its ids index (GraphProgram::
// lookup_table_rows).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "formats/graph/graph_program.h"
#include "formats/input_findings.h"

namespace grassaudit {

// Per user input, in order (those in `bound_elsewhere`, the --state inputs, skipped):
//   an integer input that indexes a table the file holds       tokens:V, V the table's rows
//   a bool or integer input named like a mask (attention_mask)  ones
//   a floating [B, T, C] input with C declared                  features:C ([B, C, T] at time axis 2)
// anything else is a finding without a binding, with what to pass.
std::vector<InputFinding> find_graph_inputs(const GraphProgram& program, int64_t time_axis,
                                            const std::set<std::string>& bound_elsewhere = {});

}  // namespace grassaudit
