#include "formats/torch/zip_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/little_endian.h"

namespace grassaudit {

namespace {

const unsigned char* at(const std::string& s, uint64_t offset) {
  return reinterpret_cast<const unsigned char*>(s.data()) + offset;
}

}  // namespace

std::optional<ZipReader> ZipReader::open(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(fmt::format("{}: cannot open the file", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse(ss.str());
}

std::optional<ZipReader> ZipReader::parse(std::string bytes) {
  const uint64_t size = bytes.size();
  if (size < 22) return std::nullopt;
  // End of central directory: 22 bytes plus a comment of up to 64 KiB.
  const uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  int64_t eocd = -1;
  for (uint64_t i = size - 22 + 1; i-- > lowest;)
    if (read_le(at(bytes, i), 4) == 0x06054b50) {
      eocd = static_cast<int64_t>(i);
      break;
    }
  if (eocd < 0) return std::nullopt;
  uint64_t entries = read_le(at(bytes, eocd + 10), 2), cd_size = read_le(at(bytes, eocd + 12), 4),
           cd_offset = read_le(at(bytes, eocd + 16), 4);
  if ((entries == 0xFFFF || cd_offset == 0xFFFFFFFF || cd_size == 0xFFFFFFFF) && eocd >= 20 &&
      read_le(at(bytes, eocd - 20), 4) == 0x07064b50) {
    // zip64 (PyTorch writes it for large files): the locator points at the zip64 EOCD record.
    const uint64_t z64 = read_le(at(bytes, eocd - 20 + 8), 8);
    if (z64 > size || size - z64 < 56 || read_le(at(bytes, z64), 4) != 0x06064b50) return std::nullopt;
    entries = read_le(at(bytes, z64 + 32), 8);
    cd_size = read_le(at(bytes, z64 + 40), 8);
    cd_offset = read_le(at(bytes, z64 + 48), 8);
  }
  if (cd_offset > size || cd_size > size - cd_offset) return std::nullopt;
  ZipReader z;
  uint64_t p = cd_offset;
  const uint64_t end = cd_offset + cd_size;
  for (uint64_t e = 0; e < entries; ++e) {
    if (end - p < 46 || read_le(at(bytes, p), 4) != 0x02014b50) return std::nullopt;
    Entry entry;
    entry.method = static_cast<uint16_t>(read_le(at(bytes, p + 10), 2));
    entry.size = read_le(at(bytes, p + 20), 4);
    entry.uncompressed = read_le(at(bytes, p + 24), 4);
    const uint64_t n = read_le(at(bytes, p + 28), 2), x = read_le(at(bytes, p + 30), 2), c = read_le(at(bytes, p + 32), 2);
    entry.local_offset = read_le(at(bytes, p + 42), 4);
    if (end - p - 46 < n + x + c) return std::nullopt;
    entry.name.assign(bytes.data() + p + 46, n);
    // zip64 extra field: the 0xFFFFFFFF fields follow in order (uncompressed, compressed, offset).
    uint64_t q = p + 46 + n;
    const uint64_t xend = q + x;
    while (xend - q >= 4) {
      const uint64_t id = read_le(at(bytes, q), 2), len = read_le(at(bytes, q + 2), 2);
      if (xend - q - 4 < len) break;
      if (id == 0x0001) {
        uint64_t r = q + 4;
        const uint64_t rend = r + len;
        if (entry.uncompressed == 0xFFFFFFFF && rend - r >= 8) entry.uncompressed = read_le(at(bytes, r), 8), r += 8;
        if (entry.size == 0xFFFFFFFF && rend - r >= 8) entry.size = read_le(at(bytes, r), 8), r += 8;
        if (entry.local_offset == 0xFFFFFFFF && rend - r >= 8) entry.local_offset = read_le(at(bytes, r), 8);
      }
      q += 4 + len;
    }
    z.entries_.push_back(std::move(entry));
    p += 46 + n + x + c;
  }
  // One top-level folder shared by every entry: PyTorch's stream writer's archive name.
  if (!z.entries_.empty()) {
    const auto slash = z.entries_[0].name.find('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string root = z.entries_[0].name.substr(0, slash + 1);
      if (std::all_of(z.entries_.begin(), z.entries_.end(),
                      [&](const Entry& e) { return e.name.compare(0, root.size(), root) == 0; }))
        z.root_ = root.substr(0, slash);
    }
  }
  z.bytes_ = std::move(bytes);
  return z;
}

const ZipReader::Entry* ZipReader::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  if (!root_.empty())
    for (const auto& e : entries_)
      if (e.name.size() == root_.size() + 1 + name.size() && e.name.compare(root_.size() + 1, name.size(), name) == 0)
        return &e;
  return nullptr;
}

std::string ZipReader::read(const Entry& e) const {
  if (e.method != 0)
    throw InputError(fmt::format("archive entry {} is compressed (method {}); PyTorch writes its archives uncompressed",
                                 e.name, e.method));
  const uint64_t size = bytes_.size();
  if (e.local_offset > size || size - e.local_offset < 30 || read_le(at(bytes_, e.local_offset), 4) != 0x04034b50)
    throw InputError(fmt::format("archive entry {}: its local header is missing (truncated or damaged archive)", e.name));
  const uint64_t data = e.local_offset + 30 + read_le(at(bytes_, e.local_offset + 26), 2) + read_le(at(bytes_, e.local_offset + 28), 2);
  if (data > size || size - data < e.size)
    throw InputError(fmt::format("archive entry {} ({} bytes) reaches past the end of the file (truncated archive)",
                                 e.name, e.size));
  return bytes_.substr(data, e.size);
}

std::string ZipReader::read(const std::string& name) const {
  const Entry* e = find(name);
  if (!e) throw InputError(fmt::format("the archive has no entry {}", name));
  return read(*e);
}

}  // namespace grassaudit
