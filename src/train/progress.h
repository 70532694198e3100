#pragma once
// Training progress on stderr: a redrawn bar (percent, step, loss, tokens/s, ETA) when stderr
// is a terminal; plain lines every `every` steps otherwise (logs, CI, pipes).
#include <chrono>
#include <cstdint>
#include <string>

namespace grassaudit {

// "1h02m", "3m05s", "42s"
std::string format_duration(double seconds);

class Progress {
 public:
  Progress(int64_t total_steps, int64_t every, bool force_plain = false);
  // Called after every step. tokens_per_second: recent rate; eta from it.
  void update(int64_t step, double epoch, double loss, double lr, double tokens_per_second,
              double eta_seconds);
  // Ends a drawn bar line before other output is printed.
  void break_line();

 private:
  int64_t total_;
  int64_t every_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace grassaudit
