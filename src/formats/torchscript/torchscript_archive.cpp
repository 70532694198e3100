#include "formats/torchscript/torchscript_archive.h"

#include "util/error_text.h"
#include "util/little_endian.h"
#include "util/string_affix.h"

#include <fmt/format.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <vector>

namespace grassaudit {
namespace {

// What the zip archive holds: entry names and the first bytes of a few small records. Reads only
// the central directory (at the end of the file) and the records asked for, never the weights.
struct ZipListing {
  std::vector<std::string> names;
  std::vector<uint64_t> local_offsets;
  std::vector<uint64_t> sizes;  // compressed sizes, from the central directory (PyTorch writes
                                // data descriptors: the local headers may hold 0)
};

std::optional<ZipListing> list_zip(std::ifstream& f, uint64_t size) {
  // End of central directory: 22 bytes plus a comment of up to 64 KiB.
  const uint64_t tail = std::min<uint64_t>(size, 22 + 65535 + 20);
  std::vector<unsigned char> buf(tail);
  f.seekg(static_cast<std::streamoff>(size - tail));
  if (!f.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(tail))) return std::nullopt;
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail) - 22; i >= 0; --i)
    if (read_le(&buf[i], 4) == 0x06054b50) {
      eocd = i;
      break;
    }
  if (eocd < 0) return std::nullopt;
  uint64_t entries = read_le(&buf[eocd + 10], 2), cd_size = read_le(&buf[eocd + 12], 4), cd_offset = read_le(&buf[eocd + 16], 4);
  if ((entries == 0xFFFF || cd_offset == 0xFFFFFFFF) && eocd >= 20 && read_le(&buf[eocd - 20], 4) == 0x07064b50) {
    // zip64 (PyTorch writes it for large files): the locator points at the zip64 EOCD record.
    const uint64_t z64 = read_le(&buf[eocd - 20 + 8], 8);
    unsigned char rec[56];
    f.seekg(static_cast<std::streamoff>(z64));
    if (!f.read(reinterpret_cast<char*>(rec), sizeof rec) || read_le(rec, 4) != 0x06064b50) return std::nullopt;
    entries = read_le(rec + 32, 8);
    cd_size = read_le(rec + 40, 8);
    cd_offset = read_le(rec + 48, 8);
  }
  if (cd_offset + cd_size > size || cd_size > (64u << 20)) return std::nullopt;
  std::vector<unsigned char> cd(cd_size);
  f.seekg(static_cast<std::streamoff>(cd_offset));
  if (!f.read(reinterpret_cast<char*>(cd.data()), static_cast<std::streamsize>(cd_size))) return std::nullopt;
  ZipListing out;
  uint64_t p = 0;
  for (uint64_t e = 0; e < entries && p + 46 <= cd_size; ++e) {
    if (read_le(&cd[p], 4) != 0x02014b50) return std::nullopt;
    const uint64_t n = read_le(&cd[p + 28], 2), x = read_le(&cd[p + 30], 2), c = read_le(&cd[p + 32], 2);
    if (p + 46 + n > cd_size) return std::nullopt;
    out.names.emplace_back(reinterpret_cast<const char*>(&cd[p + 46]), n);
    out.local_offsets.push_back(read_le(&cd[p + 42], 4));
    out.sizes.push_back(read_le(&cd[p + 20], 4));
    p += 46 + n + x + c;
  }
  return out;
}

// The bytes of a small stored (uncompressed, as PyTorch writes them) record, "" if unreadable.
std::string read_stored(std::ifstream& f, uint64_t local_offset, uint64_t size) {
  unsigned char h[30];
  f.clear();
  f.seekg(static_cast<std::streamoff>(local_offset));
  if (!f.read(reinterpret_cast<char*>(h), sizeof h) || read_le(h, 4) != 0x04034b50 || read_le(h + 8, 2) != 0) return {};
  const uint64_t len = size;
  f.seekg(static_cast<std::streamoff>(local_offset + 30 + read_le(h + 26, 2) + read_le(h + 28, 2)));
  std::string s(len, '\0');
  if (!f.read(s.data(), static_cast<std::streamsize>(len))) return {};
  return trim(s);
}

const std::string kRemedyExport =
    "save it with torch.export.save(torch.export.export(model, args), PATH), or export it with "
    "torch.jit.script(model).save(PATH) or torch.jit.trace(model, example).save(PATH)";

}  // namespace

std::string explain_torchscript_load_failure(const std::string& path, const std::string& loader_error) {
  const std::string reason = first_meaningful_line(loader_error);
  const std::string libtorch = std::string("LibTorch ") + TORCH_VERSION;
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  const auto size = f ? static_cast<uint64_t>(f.tellg()) : 0;
  char magic[4] = {0, 0, 0, 0};
  if (f && size >= 4) {
    f.seekg(0);
    f.read(magic, 4);
  }
  if (size < 4 || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
    if (size >= 2 && static_cast<unsigned char>(magic[0]) == 0x80 && magic[1] >= 2 && magic[1] <= 5)
      return fmt::format("a legacy (pre-1.6 format) torch.save pickle, not TorchScript: load it in Python and {}",
                         kRemedyExport);
    return fmt::format("not a PyTorch file (no zip archive, {} bytes): grassaudit reads what torch.export.save and "
                       "torch.jit.save write; {}",
                       size, kRemedyExport);
  }
  const auto listing = list_zip(f, size);
  if (!listing)
    return fmt::format("a zip file whose directory cannot be read (truncated or damaged?): {}", reason.empty() ? "no reason given" : reason);
  const auto& names = listing->names;
  auto find = [&](const std::string& suffix) -> std::optional<size_t> {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == suffix || ends_with(names[i], "/" + suffix)) return i;
    return std::nullopt;
  };
  auto record = [&](const std::string& suffix) -> std::string {
    const auto i = find(suffix);
    return i && listing->sizes[*i] <= 64 ? read_stored(f, listing->local_offsets[*i], listing->sizes[*i]) : std::string();
  };
  // torch.export (ExportedProgram, .pt2): a different format altogether.
  if (find("serialized_exported_program.json") || find("archive_format") || find("models/model.json")) {
    std::string v = record("version");
    if (v.empty()) v = record(".data/version");
    return fmt::format("a torch.export archive (.pt2{}), not TorchScript: {} cannot run an ExportedProgram; "
                       "export the model with torch.jit.script(model).save(PATH) or "
                       "torch.jit.trace(model, example).save(PATH) instead",
                       v.empty() ? "" : ", schema " + v, libtorch);
  }
  const bool has_code = std::any_of(names.begin(), names.end(),
                                    [](const std::string& n) { return n.find("/code/") != std::string::npos; });
  // A producer hint: PyTorch 2.x writes a byteorder record and .data/serialization_id, 1.13 neither.
  const std::string format_version = record("version");
  const bool written_by_2x = find("byteorder") || find(".data/serialization_id");
  const std::string producer =
      fmt::format("{}file format version {}", written_by_2x ? "a PyTorch 2.x file (byteorder record), " : "",
                  format_version.empty() ? "unknown" : format_version);
  if (!has_code && find("data.pkl"))
    return fmt::format("a torch.save file (pickled weights or module: {}), not TorchScript: load it in Python and {}",
                       producer, kRemedyExport);
  static const std::regex unknown_op(R"(Unknown builtin op: ([A-Za-z0-9_:.]+?)\.?$)");
  std::smatch m;
  if (std::regex_search(reason, m, unknown_op))
    return fmt::format("TorchScript ({}) calls operator {}, which {} does not have and grassaudit does not provide; "
                       "build grassaudit against a LibTorch that has it (-DCMAKE_PREFIX_PATH=<pip torch>/share/cmake, "
                       "scripts/README.md \"Supported LibTorch versions\") or export the model without it",
                       producer, m[1].str(), libtorch);
  return fmt::format("TorchScript ({}) that {} cannot load: {}", producer, libtorch,
                     reason.empty() ? "LibTorch gave no reason" : reason);
}

}  // namespace grassaudit
