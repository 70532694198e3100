#pragma once
// A structural check of a pickle (protocols 0-5) before LibTorch's unpickler reads it. That
// unpickler trusts the sizes it reads: one flipped byte that turns an opcode into LONG_BINPUT
// makes it grow its memo to the 4-byte index that follows (~680 million entries, 20 GB), and a
// length field of BINUNICODE8 or BINBYTES8 sizes a buffer before the bytes are read. This walks
// the opcodes and checks every length against the bytes that remain and every memo index
// against the entries written so far; what it cannot walk (an opcode it does not know) it
// leaves to the unpickler.
#include <cstddef>
#include <string>

namespace grassaudit {

// "" when nothing is out of range, else one line saying what and at which byte.
std::string pickle_out_of_range(const unsigned char* data, size_t size);

}  // namespace grassaudit
