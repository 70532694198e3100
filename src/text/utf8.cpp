#include "text/utf8.h"

#include <utf8proc.h>

namespace grassaudit {

size_t find_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {  // ASCII fast path: nearly all of WikiText and SNLI.
      ++i;
      continue;
    }
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n =
        utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0 || cp < 0) return i;
    i += static_cast<size_t>(n);
  }
  return kValidUtf8;
}

int32_t next_code_point(std::string_view s, size_t& pos) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  if (p[pos] < 0x80) return p[pos++];
  utf8proc_int32_t cp = 0;
  utf8proc_ssize_t n =
      utf8proc_iterate(p + pos, static_cast<utf8proc_ssize_t>(s.size() - pos), &cp);
  // Callers validated already; stay safe anyway by consuming one byte as U+FFFD.
  if (n <= 0 || cp < 0) {
    ++pos;
    return 0xFFFD;
  }
  pos += static_cast<size_t>(n);
  return cp;
}

void append_utf8(int32_t cp, std::string& out) {
  utf8proc_uint8_t buf[4];
  utf8proc_ssize_t n = utf8proc_encode_char(cp, buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

}  // namespace grassaudit
