#include "formats/torchscript/incremental_api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/api/module.h>

#include <vector>

namespace grassaudit {

const char* const kIncrementalContract =
    "init_state(self, batch: int) -> List[Tensor] and step(self, x: Tensor, state: List[Tensor]) -> "
    "Tuple[Tensor, List[Tensor]] (export both with @torch.jit.export)";

namespace {
// "name(a: T, ...) -> R" of a method's schema, self left out.
std::string describe(const c10::FunctionSchema& s) {
  std::vector<std::string> args;
  for (size_t i = 1; i < s.arguments().size(); ++i)
    args.push_back(fmt::format("{}: {}", s.arguments()[i].name(), s.arguments()[i].type()->annotation_str()));
  std::vector<std::string> rets;
  for (const auto& r : s.returns()) rets.push_back(r.type()->annotation_str());
  return fmt::format("{}({}) -> {}", s.name(), fmt::join(args, ", "), fmt::join(rets, ", "));
}
}  // namespace

std::string check_incremental_api(const torch::jit::Module& m) {
  const bool has_init = m.find_method("init_state").has_value(), has_step = m.find_method("step").has_value();
  if (!has_init || !has_step)
    return fmt::format("no incremental API: the module has no {} method; --incremental needs {}",
                       !has_init && !has_step ? "init_state and no step" : (!has_init ? "init_state" : "step"),
                       kIncrementalContract);
  const auto& init = m.find_method("init_state")->function().getSchema();
  const auto& step = m.find_method("step")->function().getSchema();
  auto arg_types = [](const c10::FunctionSchema& s) {
    std::vector<std::string> out;
    for (size_t i = 1; i < s.arguments().size(); ++i) out.push_back(s.arguments()[i].type()->annotation_str());
    return out;
  };
  auto ret_type = [](const c10::FunctionSchema& s) {
    return s.returns().size() == 1 ? s.returns()[0].type()->annotation_str() : std::string("?");
  };
  const bool init_ok = arg_types(init) == std::vector<std::string>{"int"} && ret_type(init) == "List[Tensor]";
  const bool step_ok = arg_types(step) == std::vector<std::string>{"Tensor", "List[Tensor]"} &&
                       ret_type(step) == "Tuple[Tensor, List[Tensor]]";
  if (init_ok && step_ok) return {};
  return fmt::format("incremental API mistyped: the module has {}; --incremental needs {}",
                     describe(init_ok ? step : init), kIncrementalContract);
}

}  // namespace grassaudit
