#include "formats/graph/graph_input_inference.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace grassaudit {

namespace {

// "[?, ?, 4]": static sizes as numbers, symbolic ones as ?; "shape not declared" when the file
// gives no rank.
std::string shape_text(const GraphInput& in) {
  if (!in.shape_known) return "shape not declared";
  std::vector<std::string> dims;
  for (const auto& d : in.sizes) dims.push_back(d ? std::to_string(*d) : "?");
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

}  // namespace

std::vector<InputFinding> find_graph_inputs(const GraphProgram& program, int64_t time_axis,
                                            const std::set<std::string>& bound_elsewhere) {
  std::vector<InputFinding> out;
  const auto& inputs = program.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const GraphInput& in = inputs[i];
    if (bound_elsewhere.count(in.name)) continue;
    InputFinding f;
    f.name = in.name;
    f.described = fmt::format("{} {}", element_type_name(in.dtype), shape_text(in));
    const bool is_bool = in.dtype == at::kBool;
    const bool integer = at::isIntegralType(in.dtype, /*includeBool=*/false);
    const bool floating = at::isFloatingType(in.dtype);
    const int64_t rank = in.shape_known ? static_cast<int64_t>(in.sizes.size()) : -1;
    if (integer && rank != 0)
      if (auto rows = program.lookup_table_rows(i); rows && *rows > 0) f.bind(InputBinding::Kind::kTokens, *rows);
    if (!f.binding && (integer || is_bool) && rank != 0 && looks_like_mask(in.name)) f.bind(InputBinding::Kind::kOnes, 0);
    // The feature dimension is the one that is neither the batch (0) nor time.
    if (!f.binding && floating && rank == 3 && (time_axis == 1 || time_axis == 2)) {
      const auto& c = in.sizes[static_cast<size_t>(3 - time_axis)];
      if (c && *c > 0) f.bind(InputBinding::Kind::kFeatures, *c);
    }
    if (!f.binding) {
      const std::string kind = rank == 0  ? "const:VALUE"
                               : floating ? "features:C"
                               : is_bool  ? "ones"
                                          : "tokens:V";
      f.pass = "pass --input " + in.name + "=" + kind;
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace grassaudit
