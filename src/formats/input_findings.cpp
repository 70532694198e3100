#include "formats/input_findings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "util/error.h"

namespace grassaudit {

std::string element_type_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    default: return c10::toString(t);
  }
}

bool looks_like_mask(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("mask") != std::string::npos;
}

std::string binding_kind(const InputBinding& b) {
  InputBinding k = b;
  k.name.clear();
  return k.str();
}

std::string describe_bindings(const std::vector<InputBinding>& bindings) {
  std::vector<std::string> parts;
  for (const auto& b : bindings) parts.push_back(b.str());
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<InputBinding> conclude_inputs(const std::string& label, const std::vector<InputFinding>& findings) {
  std::vector<InputBinding> bindings;
  bool missing = false;
  for (const auto& f : findings) {
    if (f.binding) bindings.push_back(*f.binding);
    missing = missing || (!f.binding && !f.left_out);
  }
  if (!missing) return bindings;
  // Every input, so the one line is the whole command to write: what was found, and what to pass.
  std::vector<std::string> parts;
  for (const auto& f : findings) {
    if (f.left_out) continue;
    parts.push_back(f.binding ? fmt::format("{} ({}: {})", f.name, f.described, binding_kind(*f.binding))
                              : fmt::format("{} ({}: {})", f.name, f.described, f.pass));
  }
  throw InputError(fmt::format("{}: cannot infer the inputs: {}; pass one --input per input", label,
                               fmt::join(parts, ", ")));
}

}  // namespace grassaudit
