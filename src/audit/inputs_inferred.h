#pragma once
// The inputs an audit fed a model when they were read from the model rather than given (the CLI's
// --model without --input, the Python package without inputs=): one summary line after the
// headline and the JSON's inputs_inferred, written here for both.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace grassaudit {

// (argument, KIND) in argument order: ("input_ids", "tokens:50257"), ("attention_mask", "ones").
using InputsInferred = std::vector<std::pair<std::string, std::string>>;

// `summary` with "  inputs inferred: input_ids=tokens:50257, attention_mask=ones" after its first
// line; unchanged when nothing was inferred.
std::string with_inputs_inferred(const std::string& summary, const InputsInferred& inferred);
// facts["inputs_inferred"] = {"input_ids": "tokens:50257", ...}; absent when nothing was inferred.
void add_inputs_inferred(nlohmann::json& facts, const InputsInferred& inferred);

}  // namespace grassaudit
