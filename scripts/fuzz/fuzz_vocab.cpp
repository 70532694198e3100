// The BERT vocab.txt reader on arbitrary file bytes: a table whose ids round-trip, or InputError.
#include "fuzz_common.h"
#include "text/vocab.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::write_scratch(data, size, ".vocab.txt");
  try {
    grassaudit::Vocab v = grassaudit::Vocab::load_bert(path);
    for (int32_t id = 0; id < v.size(); ++id)
      if (v.find(v.token(id)) != id) __builtin_trap();
    for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
      if (v.find(special) == grassaudit::Vocab::kNoId) __builtin_trap();
  } catch (const grassaudit::InputError&) {
  }
  return 0;
}
