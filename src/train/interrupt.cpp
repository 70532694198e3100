#include "train/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace grassaudit {
namespace {

volatile sig_atomic_t g_signal = 0;
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
  if (g_signal != 0) _exit(130);  // second signal: stop now
  g_signal = sig;
  static const char msg[] =
      "\ngrassaudit train: interrupt received; stopping after the current step (or audit / evaluation batch), then saving a checkpoint "
      "(interrupt again to stop at once)\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool interrupt_requested() { return g_signal != 0; }
int interrupt_signal() { return static_cast<int>(g_signal); }

std::string interrupt_cause() {
  return interrupt_signal() ? "signal " + std::to_string(interrupt_signal()) : "a signal to another rank";
}

}  // namespace grassaudit
