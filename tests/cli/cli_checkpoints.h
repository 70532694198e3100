#pragma once
// Checkpoint fixtures for the CLI tests, made in-process with the library's own writer (the
// only test translation unit that includes LibTorch headers, to keep test_cli cheap to build).
#include <cstdint>
#include <string>

namespace grassaudit::clitest {

struct TinyModel {
  std::string mixer = "past";
  int64_t vocab_size = 64;
  int64_t d_model = 16;
  int64_t layers = 2;
  int64_t max_len = 16;
};

// A valid grassaudit checkpoint of a tiny model. With `tokenizer` non-empty, the meta also
// holds a train config ("tokenizer", seq_len = max_len) as grassaudit train writes it, but no
// training state.
void write_tiny_checkpoint(const std::string& path, const TinyModel& m, const std::string& tokenizer = "");

// A checkpoint archive whose meta claims `claimed` while its weights are those of `actual`
// (a checkpoint from another config or mixer, or one edited by hand).
void write_mismatched_checkpoint(const std::string& path, const TinyModel& claimed, const TinyModel& actual);

// An archive with the right magic but the given meta string and no weights ("" = no meta).
void write_checkpoint_with_meta(const std::string& path, const std::string& meta);

// Loads with the library's loader. True on success; otherwise `why` gets the error. With
// `all_finite`, also reports whether every parameter and buffer is finite.
bool checkpoint_loads(const std::string& path, std::string* why, bool* all_finite = nullptr);

}  // namespace grassaudit::clitest

namespace grassaudit::clitest {
// SHA-256 of the weights the library loads from `path` ("" if it does not load): a language-model
// checkpoint, and an SNLI (train-nli) one.
std::string loaded_weights_hash(const std::string& path);
std::string loaded_nli_weights_hash(const std::string& path);
}  // namespace grassaudit::clitest
