#pragma once
// A read-only view of a zip archive as PyTorch writes them (torch.jit.save, torch.save,
// torch.export.save): the central directory, and the bytes of stored (uncompressed) entries. A
// model file is untrusted input: every offset and size is checked against the file before it is
// used, and anything that does not add up is an InputError with one line, never a crash.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace grassaudit {

class ZipReader {
 public:
  struct Entry {
    std::string name;
    uint64_t local_offset = 0;
    uint64_t size = 0;         // compressed size (= size for stored entries)
    uint64_t uncompressed = 0;
    uint16_t method = 0;       // 0 stored, 8 deflate
  };
  // nullopt when `bytes` holds no readable zip directory (not a zip, truncated, damaged).
  static std::optional<ZipReader> parse(std::string bytes);
  // Reads the whole file first; nullopt as above (InputError when the file cannot be read).
  static std::optional<ZipReader> open(const std::string& path);

  const std::vector<Entry>& entries() const { return entries_; }
  // The entry whose name is `name` exactly, or `name` under one top-level folder
  // ("archive/data.pkl" for "data.pkl"): PyTorch's stream writer puts every record under one.
  const Entry* find(const std::string& name) const;
  // The entry's bytes; InputError (one line, naming the entry) when it is compressed or
  // reaches past the end of the file.
  std::string read(const Entry& e) const;
  std::string read(const std::string& name) const;  // InputError when missing
  // The common top-level folder of every entry ("" when there is none).
  const std::string& root() const { return root_; }

 private:
  std::string bytes_;
  std::vector<Entry> entries_;
  std::string root_;
};

}  // namespace grassaudit
