#include "train/run_setup.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "train/interrupt.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/make_dirs.h"

namespace grassaudit {

namespace fs = std::filesystem;

void prepare_run_folder(const std::string& out, const std::string& last, bool fresh,
                        const std::vector<std::string>& run_files, const std::string& run_files_text) {
  if (!dist::is_main()) return;
  make_dirs(out);
  make_dirs(out + "/checkpoints");
  if (fresh)
    for (const auto& f : run_files)
      if (fs::exists(f))
        throw InputError(fmt::format("{} already holds a run ({}); choose another --out, or continue it with --resume {}",
                                     out, run_files_text, last));
  for (const auto& dir : {out, out + "/checkpoints"})
    for (const auto& stale : remove_stale_temp_files(dir))
      std::cerr << fmt::format("removed {} (a partial file left by a killed process)\n", stale);
}

void broadcast_weights(torch::nn::Module& model) {
  std::vector<at::Tensor> state = model.parameters();
  for (const auto& b : model.buffers()) state.push_back(b);
  dist::broadcast_tensors(state);
}

bool rank0_has_file(const std::string& path) {
  auto has = at::tensor({dist::is_main() && fs::exists(path) ? 1.0 : 0.0}, at::kDouble);
  dist::broadcast(has, 0);
  return has.item<double>() > 0;
}

nlohmann::json task_state_json(nlohmann::json own, const LoopState& loop, const std::string& units_key,
                               const std::optional<LogExtent>& extent) {
  loop.write_json(own, units_key);
  if (extent) write_log_extent(own, *extent);
  return own;
}

void read_task_state(const nlohmann::json& state, const std::string& units_key, const std::string& where,
                     LoopState& loop, std::optional<LogExtent>& extent, const std::function<void()>& read_own) {
  loop = LoopState::read_json(state, units_key, where);
  try {
    read_own();
    extent = read_log_extent(state);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: checkpoint training state is incomplete ({})", where, e.what()));
  }
}

void save_after_signal(TrainingTask& task, const std::string& command, const std::string& where,
                       const LoopState& state, const std::string& last) {
  task.save_last();
  std::cerr << fmt::format(
      "grassaudit {}: stopped by {}{} at step {} (epoch {:.3f}); checkpoint saved to {}\n"
      "  continue with: grassaudit {} --resume {}\n",
      command, interrupt_cause(), where, state.step, state.epoch_float(), last, command, last);
}

}  // namespace grassaudit
