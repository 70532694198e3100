#pragma once
// SIGINT / SIGTERM during training: the first signal sets a flag the trainer polls between
// steps (it then writes last.ckpt and exits 0); a second signal exits at once with 130
// (checkpoint writes are atomic, so nothing half-written is left behind).
#include <string>

#include "util/non_copyable.h"

namespace grassaudit {

// Installs the handlers for the lifetime of the guard; restores the previous ones after.
class InterruptGuard : NonCopyable {
 public:
  InterruptGuard();
  ~InterruptGuard();
};

bool interrupt_requested();
int interrupt_signal();      // the signal number received (0 if none)
// "signal N", or "a signal to another rank" when the stop was agreed with data-parallel ranks
// (train/loop.cpp) and this process itself received none.
std::string interrupt_cause();

}  // namespace grassaudit
