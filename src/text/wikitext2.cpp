#include "text/wikitext2.h"

#include <chrono>

#include "text/data_dir.h"
#include "text/token_cache.h"
#include "text/wikitext_counts.h"
#include "text/wikitext_wordpiece.h"
#include "text/word_tokenizer.h"
#include "text/wordpiece.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"
#include "util/format_count.h"
#include "util/hash.h"

namespace grassaudit {
namespace {

// Bump when tokenizer behaviour changes, so old cache files stop matching.
constexpr uint64_t kTokenizerRevision = 1;
const char* const kSplits[3] = {"train", "valid", "test"};

struct SplitFile {
  std::string name;   // "wiki.train.tokens", for messages
  std::string bytes;
};

uint64_t cache_key(const std::string& tokenizer, const std::string& vocab_bytes,
                   const std::vector<SplitFile>& files) {
  Fnv1a64 h;
  h.update("grassaudit wikitext2");
  h.update_u64(kTokenizerRevision);
  h.update_u64(tokenizer.size());
  h.update(tokenizer);
  h.update_u64(vocab_bytes.size());
  h.update(vocab_bytes);
  for (const auto& f : files) {
    h.update_u64(f.bytes.size());
    h.update(f.bytes);
  }
  return h.digest();
}

// Fills corpus ids from a cache entry if it has the right shape and every id is in range.
bool adopt_cache(TokenCacheEntry& e, bool word_level, TokenizedCorpus& corpus) {
  if (e.arrays.size() != 3) return false;
  if (word_level) {
    if (e.strings.empty()) return false;
    try {
      corpus.vocab = Vocab::from_tokens(std::move(e.strings), "cached word vocabulary");
    } catch (const InputError&) {
      return false;
    }
  }
  const int64_t n = corpus.vocab.size();
  for (const auto& a : e.arrays) {
    for (int32_t id : a) {
      if (id < 0 || id >= n) return false;
    }
  }
  corpus.train = std::move(e.arrays[0]);
  corpus.valid = std::move(e.arrays[1]);
  corpus.test = std::move(e.arrays[2]);
  corpus.from_cache = true;
  return true;
}

void check_word_vocab(const Vocab& vocab) {
  if (vocab.size() != kWikitext2WordVocab) {
    throw InputError("wikitext-2: expected a word vocabulary of " +
                     format_count(kWikitext2WordVocab) + " over the three splits, found " +
                     format_count(vocab.size()) + other_data_hint());
  }
}

void tokenize(const std::vector<SplitFile>& files, TokenizedCorpus& corpus) {
  std::vector<int32_t>* outs[3] = {&corpus.train, &corpus.valid, &corpus.test};
  const auto t0 = std::chrono::steady_clock::now();
  if (corpus.tokenizer == "word") {
    std::vector<NamedText> texts;
    for (const auto& f : files) texts.push_back({f.name, f.bytes});
    WordCorpus wc = word_tokenize(texts);
    corpus.vocab = wc.vocab;
    for (int s = 0; s < 3; ++s) *outs[s] = std::move(wc.ids[static_cast<size_t>(s)]);
  } else {
    WordPieceTokenizer tok(corpus.vocab);
    for (int s = 0; s < 3; ++s) {
      outs[s]->reserve(files[static_cast<size_t>(s)].bytes.size() / 4);
      encode_wikitext_wordpiece(files[static_cast<size_t>(s)].bytes,
                                files[static_cast<size_t>(s)].name, tok, *outs[s]);
    }
  }
  corpus.tokenize_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TokenizedCorpus load_wikitext2(const std::string& data_dir_flag, const std::string& tokenizer,
                               bool allow_other_data, const std::string& cache_dir) {
  if (tokenizer != "word" && tokenizer != "wordpiece") {
    throw InputError("unknown tokenizer \"" + tokenizer + "\" (expected word or wordpiece)");
  }
  const bool word_level = tokenizer == "word";
  TokenizedCorpus corpus;
  corpus.tokenizer = tokenizer;

  std::vector<SplitFile> files;
  for (const char* split : kSplits) {
    const std::string name = std::string("wiki.") + split + ".tokens";
    files.push_back({name, read_file(require_data_file(data_dir_flag, "wikitext-2/" + name))});
    corpus.file_sha256["wikitext-2/" + name] = sha256_hex(files.back().bytes);
  }
  std::string vocab_bytes;
  if (!word_level) {
    const std::string path = require_data_file(data_dir_flag, "bert-base-uncased/vocab.txt");
    vocab_bytes = read_file(path);
    corpus.file_sha256["bert-base-uncased/vocab.txt"] = sha256_hex(vocab_bytes);
    corpus.vocab = Vocab::parse_bert(vocab_bytes, path);  // the bytes the cache key hashes
    if (!allow_other_data && corpus.vocab.size() != kBertUncasedVocab) {
      throw InputError("vocab.txt: expected " + format_count(kBertUncasedVocab) +
                       " entries, found " + format_count(corpus.vocab.size()) +
                       other_data_hint());
    }
  }

  // Always validated (cheap, ~0.1 s): UTF-8 errors get line numbers even on a cache hit.
  for (size_t s = 0; s < files.size(); ++s) {
    WordCounts found = count_words(files[s].bytes, files[s].name);
    if (!allow_other_data) check_counts(files[s].name, published_wikitext2_counts(kSplits[s]), found);
  }

  const uint64_t key = cache_key(tokenizer, vocab_bytes, files);
  const std::string cache_path =
      cache_dir.empty() ? "" : token_cache_path(cache_dir, "wikitext2-" + tokenizer, key);
  if (!cache_path.empty()) {
    auto entry = read_token_cache(cache_path, key);
    if (entry && adopt_cache(*entry, word_level, corpus)) {
      if (word_level && !allow_other_data) check_word_vocab(corpus.vocab);
      return corpus;
    }
  }

  tokenize(files, corpus);
  if (word_level && !allow_other_data) check_word_vocab(corpus.vocab);

  if (!cache_path.empty()) {
    TokenCacheEntry entry{{corpus.train, corpus.valid, corpus.test}, {}};
    if (word_level) entry.strings = corpus.vocab.tokens();
    write_token_cache(cache_path, key, entry);
  }
  return corpus;
}

}  // namespace grassaudit
