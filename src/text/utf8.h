#pragma once
// UTF-8 validation and decoding (via utf8proc), shared by every text reader.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grassaudit {

constexpr size_t kValidUtf8 = static_cast<size_t>(-1);

// Byte offset of the first invalid sequence in `s` (overlong forms, surrogates, code points
// above U+10FFFF and truncated sequences are invalid), or kValidUtf8 if `s` is valid.
size_t find_invalid_utf8(std::string_view s);

// Decodes the code point starting at s[pos] (s must be valid UTF-8, pos < s.size()) and
// advances pos past it.
int32_t next_code_point(std::string_view s, size_t& pos);

// Appends the UTF-8 encoding of code point `cp` (valid scalar value) to `out`.
void append_utf8(int32_t cp, std::string& out);

}  // namespace grassaudit
