#pragma once
// A model file's inputs read from the file itself, for `grassaudit audit --model FILE` without
// --input: names and dtypes from the graph's inputs, tokens:V from the embedding table an integer
// input indexes, features:C from a declared [B, T, C] shape (a TorchScript file declares none: C
// from the first op that reads the input, where that op fixes it), ones for a mask input. Each
// format's reader finds what its file says (formats/input_findings.h); this is the one entry.
#include <cstdint>
#include <string>
#include <vector>

#include "audit/model_file_target.h"

namespace grassaudit {

// The bindings, in the order of the file's inputs, each named. InputError, one line, when the
// file is no model read here (as open_model_file says it) or does not say enough: "<path>: cannot
// infer the inputs: x (float32 [?, ?, ?]: pass --input x=features:C); pass one --input per
// input". The inputs --state binds are left out.
std::vector<InputBinding> infer_model_inputs(const std::string& path, int64_t time_axis = 1,
                                             const StreamingOptions& streaming = {});

}  // namespace grassaudit
