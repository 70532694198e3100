// The archive reader of torch.export and torch.save files (src/formats/torch/zip_reader.h) on arbitrary
// bytes: no zip (nullopt), or a directory whose every entry reads or throws InputError; nothing
// else.
#include <string>

#include "formats/torch/zip_reader.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto zip = grassaudit::ZipReader::parse(std::string(reinterpret_cast<const char*>(data), size));
  if (!zip) return 0;
  for (const auto& e : zip->entries()) {
    try {
      const std::string bytes = zip->read(e);
      if (bytes.size() != e.size) __builtin_trap();
    } catch (const grassaudit::InputError&) {
    }
    if (zip->find(e.name) == nullptr) __builtin_trap();
  }
  return 0;
}
