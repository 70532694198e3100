// The allowlist unpickler of torch.save files (src/formats/torch/weights_unpickler.h) on arbitrary
// bytes. The first byte picks the shape of the input: even, the rest is the whole file; odd, the
// rest is the pickle (archive/data.pkl) of an otherwise well-formed archive with four small
// storages, so the fuzzer works on the pickle machine rather than the zip layer. Either way the
// reader returns tensors or throws InputError; nothing else.
#include <string>

#include "formats/torch/weights_unpickler.h"
#include "fuzz_common.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string file =
      data[0] % 2 == 0
          ? rest
          : fuzz::stored_zip({{"archive/data.pkl", rest},
                              {"archive/data/0", std::string(64, '\x01')},
                              {"archive/data/1", std::string(16, '\x02')},
                              {"archive/data/2", std::string(8, '\x03')},
                              {"archive/data/3", std::string()},
                              {"archive/version", "3\n"}});
  try {
    for (auto& [name, t] : grassaudit::read_saved_tensor_dict(file, "fuzz input")) {
      if (t.defined()) (void)t.sum();  // every element the view claims is readable
    }
  } catch (const grassaudit::InputError&) {
  }
  try {
    at::Tensor t = grassaudit::read_saved_tensor(file, "fuzz input");
    if (t.defined()) (void)t.sum();
  } catch (const grassaudit::InputError&) {
  }
  return 0;
}
