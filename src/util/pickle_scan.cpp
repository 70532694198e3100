#include "util/pickle_scan.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#include "util/little_endian.h"

namespace grassaudit {

std::string pickle_out_of_range(const unsigned char* data, size_t size) {
  size_t pos = 0;
  uint64_t memo = 0;  // entries written so far (ids are given in order from 0)
  auto need = [&](size_t n) { return size - pos >= n; };
  auto cut = [&](const char* what) { return fmt::format("pickle truncated in {} at byte {}", what, pos); };
  while (pos < size) {
    const unsigned char op = data[pos++];
    // Fixed-size arguments and counted blobs.
    int arg = -1;         // bytes of argument
    int len_bytes = 0;    // a length prefix of this many bytes, then that many bytes
    bool put = false, get = false, memoize = false;
    switch (op) {
      case '.': return "";  // STOP
      case '(': case ')': case ']': case '}': case 'N': case 't': case 'a': case 'e': case 's': case 'u':
      case 'R': case 'b': case 'Q': case 'd': case 'l': case '0': case '1': case '2': case 0x81: case 0x85:
      case 0x86: case 0x87: case 0x88: case 0x89: case 0x8f: case 0x90: case 0x91: case 0x92: case 0x93:
        arg = 0;
        break;
      case 0x94: arg = 0; memoize = true; break;  // MEMOIZE
      case 0x80: case 'K': arg = 1; break;         // PROTO, BININT1
      case 'M': arg = 2; break;                    // BININT2
      case 'J': arg = 4; break;                    // BININT
      case 'G': case 0x95: arg = 8; break;         // BINFLOAT, FRAME
      case 'q': arg = 1; put = true; break;        // BINPUT
      case 'r': arg = 4; put = true; break;        // LONG_BINPUT
      case 'h': arg = 1; get = true; break;        // BINGET
      case 'j': arg = 4; get = true; break;        // LONG_BINGET
      case 0x8a: case 'U': case 'C': case 0x8c: len_bytes = 1; break;  // LONG1, SHORT_BINSTRING/BYTES/UNICODE
      case 0x8b: case 'X': case 'T': case 'B': len_bytes = 4; break;   // LONG4, BINUNICODE, BINSTRING, BINBYTES
      case 0x8d: case 0x8e: case 0x96: len_bytes = 8; break;           // BINUNICODE8, BINBYTES8, BYTEARRAY8
      case 'c': {  // GLOBAL: two lines
        for (int line = 0; line < 2; ++line) {
          const void* nl = std::memchr(data + pos, '\n', size - pos);
          if (!nl) return cut("GLOBAL");
          pos = static_cast<size_t>(static_cast<const unsigned char*>(nl) - data) + 1;
        }
        continue;
      }
      default:
        return "";  // an opcode this walk does not know: the unpickler decides
    }
    if (len_bytes > 0) {
      if (!need(static_cast<size_t>(len_bytes))) return cut("a length");
      const uint64_t n = read_le(data + pos, len_bytes);
      pos += static_cast<size_t>(len_bytes);
      if (n > size - pos)
        return fmt::format("pickle length {} at byte {} runs past its end ({} bytes left)", n, pos, size - pos);
      pos += static_cast<size_t>(n);
      continue;
    }
    if (!need(static_cast<size_t>(arg))) return cut("an argument");
    const uint64_t v = arg > 0 ? read_le(data + pos, arg) : 0;
    pos += static_cast<size_t>(arg);
    if (put) {
      if (v > memo) return fmt::format("pickle memo index {} at byte {} skips past the {} entries written", v, pos, memo);
      if (v == memo) ++memo;
    } else if (get) {
      if (v >= memo) return fmt::format("pickle memo index {} at byte {} was never written ({} entries)", v, pos, memo);
    } else if (memoize) {
      ++memo;
    }
  }
  return "pickle has no STOP";
}

}  // namespace grassaudit
