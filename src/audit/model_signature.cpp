#include "audit/model_signature.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>

#include "util/error.h"
#include "util/parse_number.h"

namespace grassaudit {
namespace {

int64_t positive(const std::string& kind, const std::string& num, const std::string& text) {
  const std::optional<long long> n = parse_whole_integer(num);
  if (!n || *n < 1) throw InputError(fmt::format("--input {}: '{}' of {} is not a positive integer", text, num, kind));
  return *n;
}

// One step of a leaf path: an index ([3]) or a string key (["logits"]).
struct PathStep {
  bool is_key = false;
  int64_t index = 0;
  std::string key;
};

std::vector<PathStep> parse_path(const std::string& path) {
  std::vector<PathStep> steps;
  size_t i = 0;
  auto bad = [&]() {
    return InputError(fmt::format("--output '{}': a leaf path is a sequence of [INDEX] or [\"KEY\"], e.g. [0], "
                                  "[\"logits\"], [1][0] (\"\" is the output itself)",
                                  path));
  };
  while (i < path.size()) {
    if (path[i] != '[') throw bad();
    const auto close = path.find(']', i);
    if (close == std::string::npos) throw bad();
    const std::string inner = path.substr(i + 1, close - i - 1);
    PathStep s;
    if (inner.size() >= 2 && inner.front() == '"' && inner.back() == '"') {
      s.is_key = true;
      s.key = inner.substr(1, inner.size() - 2);
      if (s.key.find('"') != std::string::npos) throw bad();
    } else {
      if (inner.empty() || !std::all_of(inner.begin(), inner.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw bad();
      s.index = std::stoll(inner);
    }
    steps.push_back(s);
    i = close + 1;
  }
  return steps;
}

std::string shape_str(const at::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes().vec(), ", ")); }

// Why a tensor leaf is not audited ("" when it is).
std::string skip_reason(const at::Tensor& t, int64_t batch, int64_t L, int64_t K) {
  if (!at::isFloatingType(t.scalar_type()))
    return fmt::format("dtype {} is not floating point", c10::toString(t.scalar_type()));
  if (t.dim() <= K) return fmt::format("shape {} has no time axis at dimension {} (--time-axis)", shape_str(t), K);
  if (t.size(0) != batch) return fmt::format("shape {}: dimension 0 is not the batch ({})", shape_str(t), batch);
  if (t.size(K) != L)
    return fmt::format("shape {}: dimension {} (--time-axis) is {}, not the length {}", shape_str(t), K, t.size(K), L);
  return "";
}

std::string key_step(const c10::IValue& key) {
  if (key.isString()) return fmt::format("[\"{}\"]", key.toStringRef());
  if (key.isInt()) return fmt::format("[{}]", key.toInt());
  return fmt::format("[{}]", key.tagKind());
}

}  // namespace

InputBinding InputBinding::parse(const std::string& text) {
  InputBinding b;
  std::string kind = text;
  const auto eq = text.find('=');
  if (eq != std::string::npos) {
    b.name = text.substr(0, eq);
    kind = text.substr(eq + 1);
    if (b.name.empty()) throw InputError(fmt::format("--input '{}': NAME= needs a name", text));
  }
  const auto colon = kind.find(':');
  const std::string head = kind.substr(0, colon);
  if (colon == std::string::npos && (head == "ones" || head == "zeros")) {
    b.kind = head == "ones" ? Kind::kOnes : Kind::kZeros;
    return b;
  }
  if (head == "const" && colon != std::string::npos) {
    b.kind = Kind::kConst;
    b.value = kind.substr(colon + 1);
    if (!parse_whole_double(b.value))
      throw InputError(fmt::format("--input '{}': const:VALUE needs a number", text));
    return b;
  }
  if (colon == std::string::npos || (head != "tokens" && head != "features"))
    throw InputError(fmt::format("--input '{}': KIND must be tokens:V, features:C, ones, zeros or const:VALUE ([NAME=]KIND)", text));
  b.kind = head == "tokens" ? Kind::kTokens : Kind::kFeatures;
  b.size = positive(head, kind.substr(colon + 1), text);
  return b;
}

std::string InputBinding::str() const {
  std::string k = kind == Kind::kTokens     ? fmt::format("tokens:{}", size)
                  : kind == Kind::kFeatures ? fmt::format("features:{}", size)
                  : kind == Kind::kOnes     ? "ones"
                  : kind == Kind::kConst    ? "const:" + value
                                            : "zeros";
  return name.empty() ? k : name + "=" + k;
}

std::string ModelSignature::describe_arguments(const std::vector<ForwardArgument>& args) {
  std::vector<std::string> parts{"self"};
  for (const auto& a : args) parts.push_back(fmt::format("{}: {}{}", a.name, a.type, a.has_default ? " = <default>" : ""));
  return fmt::format("forward({})", fmt::join(parts, ", "));
}

ModelSignature::ModelSignature(const std::vector<ForwardArgument>& args, const std::vector<InputBinding>& inputs,
                               int64_t time_axis, double feature_scale)
    : time_axis_(time_axis) {
  const std::string listing = describe_arguments(args);
  std::vector<std::optional<InputBinding>> bound(args.size());
  for (const auto& in : inputs) {
    size_t at = 0;
    if (!in.name.empty()) {
      auto it = std::find_if(args.begin(), args.end(), [&](const ForwardArgument& a) { return a.name == in.name; });
      if (it == args.end())
        throw InputError(fmt::format("--input {}: forward has no argument '{}'; it is {}", in.str(), in.name, listing));
      at = static_cast<size_t>(it - args.begin());
      if (bound[at]) throw InputError(fmt::format("--input {}: argument '{}' is given twice; forward is {}", in.str(), in.name, listing));
    } else {
      while (at < bound.size() && bound[at]) ++at;
      if (at == bound.size())
        throw InputError(fmt::format("{} --input values for {} argument{}: forward is {}", inputs.size(), args.size(),
                                     args.size() == 1 ? "" : "s", listing));
    }
    bound[at] = in;
    bound[at]->name = args[at].name;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (bound[i]) {
      bindings_.push_back(*bound[i]);
      continue;
    }
    if (!args[i].has_default)
      throw InputError(fmt::format("forward argument '{}' ({}) has no --input and no default: give one --input per "
                                   "argument ([NAME=]tokens:V|features:C|ones|zeros); forward is {}",
                                   args[i].name, args[i].type, listing));
  }
  int tokens = 0, features = 0;
  for (const auto& b : bindings_) {
    tokens += b.kind == InputBinding::Kind::kTokens;
    features += b.kind == InputBinding::Kind::kFeatures;
  }
  if (tokens + features == 0)
    throw InputError(fmt::format("no --input is tokens:V or features:C: there is nothing to perturb (forward is {})", listing));
  if (tokens > 0 && features > 0)
    throw InputError("--input: tokens and features inputs cannot be perturbed together (one kind per model)");
  if (time_axis < 1)
    throw InputError(fmt::format("--time-axis {}: dimension 0 is the batch; time is at 1 or later", time_axis));
  const int64_t rank = tokens > 0 ? 2 : 3;
  if (time_axis >= rank)
    throw InputError(fmt::format("--time-axis {} is beyond the rank of a {} input ({}: dimensions 0 .. {})", time_axis,
                                 tokens > 0 ? "tokens" : "features", tokens > 0 ? "[B, L]" : "[B, L, C]", rank - 1));
  if (tokens > 0) {
    canonical_.kind = InputSpec::Kind::kTokens;
    std::vector<int64_t> vocabs;
    for (const auto& b : bindings_)
      if (b.kind == InputBinding::Kind::kTokens) vocabs.push_back(b.size);
    canonical_.size = *std::max_element(vocabs.begin(), vocabs.end());
    if (vocabs.size() > 1) canonical_.vocab_slots = vocabs;
  } else {
    canonical_.kind = InputSpec::Kind::kFeatures;
    for (const auto& b : bindings_)
      if (b.kind == InputBinding::Kind::kFeatures) canonical_.size += b.size;
  }
  canonical_.feature_scale = feature_scale;
}

std::vector<std::pair<std::string, c10::IValue>> ModelSignature::arguments(const at::Tensor& x) const {
  std::vector<std::pair<std::string, c10::IValue>> out;
  const int64_t B = x.size(0), L = x.size(1);
  int64_t slot = 0, channel = 0;
  for (const auto& b : bindings_) {
    at::Tensor t;
    switch (b.kind) {
      case InputBinding::Kind::kTokens:
        t = canonical_.vocab_slots.empty() ? x : x.select(2, slot).contiguous();  // [B, L]
        ++slot;
        break;
      case InputBinding::Kind::kFeatures:
        t = x.narrow(2, channel, b.size);  // [B, L, C_j]
        channel += b.size;
        if (time_axis_ != 1) t = t.movedim(1, time_axis_);  // [B, C_j, L]
        t = t.contiguous();
        break;
      case InputBinding::Kind::kOnes: t = at::ones({B, L}, at::kLong); break;
      case InputBinding::Kind::kZeros: t = at::zeros({B, L}, at::kLong); break;
      case InputBinding::Kind::kConst:
        t = b.value.find_first_of(".eEnN") == std::string::npos ? at::scalar_tensor(static_cast<int64_t>(std::stoll(b.value)), at::kLong)
                                                                : at::scalar_tensor(std::stod(b.value), at::kDouble);
        break;
    }
    out.emplace_back(b.name, t);
  }
  return out;
}

std::string ModelSignature::describe_inputs() const {
  if (bindings_.size() == 1 && time_axis_ == 1) {  // one input at time axis 1: its kind alone ("tokens:100")
    InputBinding b = bindings_[0];
    b.name.clear();
    return b.str();
  }
  std::vector<std::string> parts;
  for (const auto& b : bindings_) parts.push_back(b.str());
  std::string s = fmt::format("{}", fmt::join(parts, ", "));
  if (time_axis_ != 1) s += fmt::format("; time axis {}", time_axis_);
  return s;
}

std::vector<OutputLeaf> ModelSignature::leaves(const c10::IValue& out, int64_t batch, int64_t L) const {
  std::vector<OutputLeaf> leaves;
  std::function<void(const c10::IValue&, const std::string&)> walk = [&](const c10::IValue& v, const std::string& path) {
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      leaves.push_back(OutputLeaf{path, t.sizes().vec(), skip_reason(t, batch, L, time_axis_)});
    } else if (v.isTuple()) {
      const auto& e = v.toTupleRef().elements();
      for (size_t i = 0; i < e.size(); ++i) walk(e[i], fmt::format("{}[{}]", path, i));
    } else if (v.isList()) {
      const auto list = v.toListRef();
      for (size_t i = 0; i < list.size(); ++i) walk(list[i], fmt::format("{}[{}]", path, i));
    } else if (v.isGenericDict()) {
      for (const auto& kv : v.toGenericDict()) walk(kv.value(), path + key_step(kv.key()));
    } else {
      leaves.push_back(OutputLeaf{path, {}, fmt::format("not a tensor ({})", v.tagKind())});
    }
  };
  if (out.isTensor()) {  // one tensor: audited as always (the prober names what is wrong with it)
    leaves.push_back(OutputLeaf{"", out.toTensor().sizes().vec(), ""});
    return leaves;
  }
  walk(out, "");
  return leaves;
}

at::Tensor ModelSignature::file_leaf(const c10::IValue& out, const std::string& path, const std::string& file) const {
  try {
    return leaf(out, path);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", file, e.what()));
  }
}

at::Tensor ModelSignature::leaf(const c10::IValue& out, const std::string& path) const {
  c10::IValue v = out;
  std::string walked;
  for (const auto& s : parse_path(path)) {
    const std::string step = s.is_key ? fmt::format("[\"{}\"]", s.key) : fmt::format("[{}]", s.index);
    c10::IValue next;
    bool found = false;
    if (!s.is_key && v.isTuple()) {
      const auto& e = v.toTupleRef().elements();
      if (s.index < static_cast<int64_t>(e.size())) next = e[static_cast<size_t>(s.index)], found = true;
    } else if (!s.is_key && v.isList()) {
      const auto list = v.toListRef();
      if (s.index < static_cast<int64_t>(list.size())) next = list[static_cast<size_t>(s.index)], found = true;
    } else if (v.isGenericDict()) {
      for (const auto& kv : v.toGenericDict())
        if ((s.is_key && kv.key().isString() && kv.key().toStringRef() == s.key) ||
            (!s.is_key && kv.key().isInt() && kv.key().toInt() == s.index)) {
          next = kv.value();
          found = true;
          break;
        }
    }
    if (!found)
      throw InputError(fmt::format("output has no leaf {}{} (at {} it is a {})", walked, step,
                                   walked.empty() ? "the top" : walked, v.tagKind()));
    v = next;
    walked += step;
  }
  if (!v.isTensor())
    throw InputError(fmt::format("output {} is not a tensor but a {}", path.empty() ? "(the output itself)" : path, v.tagKind()));
  at::Tensor t = v.toTensor();
  // Only the time axis is moved here; the prober checks [B, L, ...], the dtype and finiteness
  // with the messages a one-tensor model always got.
  if (time_axis_ != 1) {
    if (t.dim() <= time_axis_)
      throw InputError(fmt::format("output {}: shape {} has no time axis at dimension {} (--time-axis)",
                                   path.empty() ? "(the output itself)" : path, shape_str(t), time_axis_));
    t = t.movedim(time_axis_, 1);
  }
  return t;
}

void validate_output_path(const std::string& path) { parse_path(path); }

}  // namespace grassaudit
