// The torch.export archive and graph reader (src/formats/export/exported_program.h: ExportedProgram::load)
// on arbitrary bytes. The first byte picks the shape of the input: even, the rest is the whole
// archive; odd, the rest replaces serialized_exported_program.json inside the committed GPT block
// export (audits/export/gpt_block.pt2), so the fuzzer works on the graph's JSON with real weights
// beside it. Either way the archive loads (and answers every question about its graph) or load
// throws InputError; nothing else.
#include <string>
#include <utility>
#include <vector>

#include "formats/export/exported_program.h"
#include "formats/torch/zip_reader.h"
#include "fuzz_common.h"
#include "util/error.h"

namespace {

const std::vector<std::pair<std::string, std::string>>& fixture_entries() {
  static const auto entries = [] {
    std::vector<std::pair<std::string, std::string>> out;
    auto zip = grassaudit::ZipReader::open(GRASSAUDIT_SOURCE_DIR "/audits/export/gpt_block.pt2");
    if (!zip) __builtin_trap();
    for (const auto& e : zip->entries()) out.emplace_back(e.name, zip->read(e));
    return out;
  }();
  return entries;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string file = rest;
  if (data[0] % 2 == 1) {
    auto entries = fixture_entries();
    for (auto& [name, bytes] : entries) {
      if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".json") == 0) bytes = rest;
    }
    file = fuzz::stored_zip(entries);
  }
  const std::string& path = fuzz::write_scratch(reinterpret_cast<const uint8_t*>(file.data()), file.size(), ".pt2");
  try {
    auto program = grassaudit::ExportedProgram::load(path);
    (void)program->describe();
    (void)program->op_census();
    (void)program->first_random_node();
    (void)program->mutates_buffers();
    (void)program->promote_dtype_arguments(true);
    (void)program->promote_dtype_arguments(false);
    for (const auto& in : program->inputs()) {
      if (in.sizes.size() != in.ranges.size()) __builtin_trap();
    }
  } catch (const grassaudit::InputError&) {
  }
  return 0;
}
