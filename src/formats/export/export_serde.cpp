#include "formats/export/export_graph.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/version.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "util/error.h"

// The serde schema's values (torch/_export/serde/schema.py): numbers, dtypes, layouts, its
// one-key unions, and the output structure's pytree spec.
namespace grassaudit {

using namespace exported;

namespace exported {

const std::string kLibTorch = std::string("LibTorch ") + TORCH_VERSION;

// Python's json writes the non-finite floats as bare NaN, Infinity and -Infinity (an attention
// mask's masked_fill(-inf) is one), which JSON does not have: outside string literals they are
// quoted before parsing, and float arguments read them back (float_of).
std::string quote_nonfinite(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 64);
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::strlen(word);
      if (text.compare(i, n, word) == 0) {
        out += '"';
        out += word;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

double float_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (t == "Infinity") return std::numeric_limits<double>::infinity();
    if (t == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  throw InputError(fmt::format("a float argument that is not a number: {}", v.dump().substr(0, 40)));
}

// The serde schema's ScalarType (torch/_export/serde/schema.py), not c10's numbering.
at::ScalarType scalar_type(int64_t serde) {
  switch (serde) {
    case 1: return at::kByte;
    case 2: return at::kChar;
    case 3: return at::kShort;
    case 4: return at::kInt;
    case 5: return at::kLong;
    case 6: return at::kHalf;
    case 7: return at::kFloat;
    case 8: return at::kDouble;
    case 9: return at::kComplexHalf;
    case 10: return at::kComplexFloat;
    case 11: return at::kComplexDouble;
    case 12: return at::kBool;
    case 13: return at::kBFloat16;
    default: throw InputError(fmt::format("scalar type {} of the serde schema is not read", serde));
  }
}

int64_t serde_layout(int64_t serde) {
  if (serde == 7) return static_cast<int64_t>(at::kStrided);
  if (serde == 1) return static_cast<int64_t>(at::kSparse);
  throw InputError(fmt::format("layout {} of the serde schema is not read (strided tensors only)", serde));
}

int64_t memory_format(int64_t serde) {
  switch (serde) {
    case 1: return static_cast<int64_t>(at::MemoryFormat::Contiguous);
    case 2: return static_cast<int64_t>(at::MemoryFormat::ChannelsLast);
    case 3: return static_cast<int64_t>(at::MemoryFormat::ChannelsLast3d);
    case 4: return static_cast<int64_t>(at::MemoryFormat::Preserve);
    default: throw InputError(fmt::format("memory format {} of the serde schema is not read", serde));
  }
}

// A union of the serde schema: an object with one key.
std::pair<std::string, const json*> kind_of(const json& u, const char* what) {
  if (!u.is_object() || u.size() != 1) throw InputError(fmt::format("{} is not a one-key union: {}", what, u.dump().substr(0, 80)));
  return {u.begin().key(), &u.begin().value()};
}

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw InputError(fmt::format("{} has no '{}'", where, key));
  return j.at(key);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

Spec parse_spec(const json& j) {
  Spec s;
  if (!j.is_object()) throw InputError("the output structure (out_spec) is not a pytree spec");
  const json& type = j.value("type", json());
  const json& children = j.value("children_spec", json::array());
  if (type.is_null()) return s;  // a leaf
  const std::string t = type.get<std::string>();
  if (t == "builtins.tuple" || t == "collections.namedtuple") {
    s.k = Spec::K::kTuple;
  } else if (t == "builtins.list" || t == "torch.fx.immutable_collections.immutable_list") {
    s.k = Spec::K::kList;
  } else if (t == "builtins.dict" || t == "collections.OrderedDict" ||
             t == "torch.fx.immutable_collections.immutable_dict") {
    s.k = Spec::K::kDict;
    const json ctx = json::parse(j.at("context").get<std::string>());
    for (const auto& k : ctx) {
      if (!k.is_string()) throw InputError("the output is a dict with keys that are not strings: not read");
      s.keys.push_back(k.get<std::string>());
    }
  } else {
    throw InputError(fmt::format("the output is a {}, which grassaudit does not read (tensors, tuples, lists and "
                                 "dicts of them)",
                                 t));
  }
  for (const auto& c : children) s.children.push_back(parse_spec(c));
  if (s.k == Spec::K::kDict && s.keys.size() != s.children.size())
    throw InputError("the output dict's keys and values do not pair up");
  return s;
}

size_t count_leaves(const Spec& s) {
  if (s.k == Spec::K::kLeaf) return 1;
  size_t n = 0;
  for (const auto& c : s.children) n += count_leaves(c);
  return n;
}

}  // namespace exported

}  // namespace grassaudit
