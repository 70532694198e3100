// The pickle walk that runs before LibTorch unpickles a checkpoint or a TorchScript file
// (src/util/pickle_scan.h) on arbitrary bytes: it returns a line or "", reads nothing outside
// the buffer, and never allocates from a size it read.
#include <string>

#include "util/pickle_scan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string why = grassaudit::pickle_out_of_range(data, size);
  if (why.find('\n') != std::string::npos) __builtin_trap();  // one line
  return 0;
}
