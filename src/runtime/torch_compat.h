#pragma once
// Every LibTorch version difference grassaudit depends on, behind TORCH_VERSION guards in this one
// header (1.13 and 2.6 are built and tested: scripts/README.md "Supported LibTorch versions"). A
// difference that cannot be hidden here (an operator 1.13 lacks) lives in
// formats/torch/torch2_ops.cpp, which asks the dispatcher at run time instead of the version.
#include <torch/optim/optimizer.h>
#include <torch/version.h>

// LibTorch 2.4 replaced the per-backend autocast calls (set_enabled / set_cpu_enabled,
// set_autocast_gpu_dtype / set_autocast_cpu_dtype) by device-type ones; the old ones are
// deprecated there and may go (runtime/runtime.cpp).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define GRASSAUDIT_AUTOCAST_BY_DEVICE 1
#else
#define GRASSAUDIT_AUTOCAST_BY_DEVICE 0
#endif

// c10d's TCPStore gained a libuv backend (TCPStoreOptions::useLibUV) in 2.2 and made it the
// default in 2.4; Debian 13's LibTorch is built without libuv, so the default fails ("use_libuv
// was requested but PyTorch was build without libuv support"). grassaudit asks for the classic
// backend, the only one 1.13 has (runtime/distributed.cpp).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
#define GRASSAUDIT_TCPSTORE_HAS_LIBUV 1
#else
#define GRASSAUDIT_TCPSTORE_HAS_LIBUV 0
#endif

#include <c10/macros/cmake_macros.h>
#if !defined(C10_USE_GLOG)
#include <c10/util/Logging.h>
#endif

#include "util/non_copyable.h"

namespace grassaudit {

// LibTorch 2.x's TCPStore logs every failed connection attempt (with its backtrace) at ERROR
// level on stderr before it throws; grassaudit reports the failure as its own one line. Where
// c10 logs by itself (Debian 13's 2.6; not Debian 12's glog build, which logs none of this) its
// level is raised to FATAL for the scope of this guard.
class QuietC10Logs : NonCopyable {
 public:
#if !defined(C10_USE_GLOG)
  QuietC10Logs() : old_(FLAGS_caffe2_log_level) { FLAGS_caffe2_log_level = 3; }
  ~QuietC10Logs() { FLAGS_caffe2_log_level = old_; }
 private:
  int old_;
#else
  QuietC10Logs() {}
#endif
};

// Optimizer::zero_grad: 1.13 zeroes every gradient in place (and takes no argument); 2.x's
// default (set_to_none = true) drops them, and AdamW then skips a parameter that got no gradient
// in a step (no decay, no moment update). Zeroed in place on both, so a run computes the same
// steps on either version. (Module::zero_grad takes the flag on both: callers pass false.)
inline void zero_grads(torch::optim::Optimizer& optimizer) {
#if TORCH_VERSION_MAJOR >= 2
  optimizer.zero_grad(/*set_to_none=*/false);
#else
  optimizer.zero_grad();
#endif
}

}  // namespace grassaudit
