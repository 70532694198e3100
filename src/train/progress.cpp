#include "train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "util/format_count.h"

namespace grassaudit {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Progress::Progress(int64_t total_steps, int64_t every, bool force_plain)
    : total_(std::max<int64_t>(total_steps, 1)), every_(std::max<int64_t>(every, 1)),
      tty_(!force_plain && isatty(STDERR_FILENO)) {}

void Progress::update(int64_t step, double epoch, double loss, double lr, double tps, double eta) {
  if (tty_) {
    auto now = std::chrono::steady_clock::now();
    if (drawn_ && step < total_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    const double frac = std::min(1.0, static_cast<double>(step) / static_cast<double>(total_));
    const int width = 24;
    const int filled = static_cast<int>(frac * width);
    std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
    std::cerr << fmt::format("\r[{}] {:5.1f}% step {}/{} ep {:.2f} loss {:.4f} {} tok/s ETA {}   ", bar,
                             100 * frac, step, total_, epoch, loss,
                             format_count(static_cast<int64_t>(tps)), format_duration(eta))
              << std::flush;
    drawn_ = true;
    return;
  }
  if (step % every_ != 0 && step != total_) return;
  std::cerr << fmt::format("step {}/{} epoch {:.3f} loss {:.4f} lr {:.3g} {} tok/s ETA {}\n", step, total_,
                           epoch, loss, lr, format_count(static_cast<int64_t>(tps)), format_duration(eta));
}

void Progress::break_line() {
  if (tty_ && drawn_) {
    std::cerr << "\n";
    drawn_ = false;
  }
}

}  // namespace grassaudit
