#pragma once
// WikiText-2 (v1, tokenized, with <unk>) loaded from the shared data folder, tokenized at
// word level (classic) or with BERT WordPiece (the paper's setting), with an on-disk cache.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "text/vocab.h"

namespace grassaudit {

struct TokenizedCorpus {
  std::string tokenizer;              // "word" or "wordpiece"
  std::vector<int32_t> train, valid, test;  // token ids, each in [0, vocab_size())
  Vocab vocab;                        // id -> token ("<eos>" / "[SEP]" end each line)
  bool from_cache = false;            // true if ids came from cache_dir
  double tokenize_seconds = 0;        // wall time spent tokenizing (0 on a cache hit)
  // SHA-256 of every file read, by path relative to the data folder (run provenance).
  std::map<std::string, std::string> file_sha256;
  int64_t vocab_size() const { return vocab.size(); }
};

// Reads <data dir>/wikitext-2/wiki.{train,valid,test}.tokens (data dir per
// resolve_data_dir; WordPiece also reads bert-base-uncased/vocab.txt).
// Unless allow_other_data, first checks the files are the published ones by their
// word-level counts (lines and tokens per split, as README.md lists; for "word" also the
// 33,278-word vocabulary; for "wordpiece" the 30,522-entry vocab.txt) and throws InputError
// ("wiki.valid.tokens: expected 217,646 tokens, found N; pass --allow-other-data to use it
// anyway"). Throws InputError for a missing file, invalid UTF-8 (with line number) or an
// unknown tokenizer name. With a non-empty cache_dir (created if needed), ids are read from
// and written to a cache file keyed by a hash of the file bytes, vocab bytes and tokenizer;
// a corrupt cache file is rebuilt.
TokenizedCorpus load_wikitext2(const std::string& data_dir_flag, const std::string& tokenizer,
                               bool allow_other_data, const std::string& cache_dir);

}  // namespace grassaudit
