#pragma once
// Nothing written is ever left half-written: write to "<path>.tmp.<pid>", flush, fsync, rename.
#include <functional>
#include <iosfwd>
#include <string>

namespace grassaudit {

// Writes `contents` to `path` atomically. Throws InputError naming the path on any failure
// (unwritable folder, full disk, a directory in the way); the temporary file is removed on
// failure. A path that names a device, pipe or symbolic link (/dev/full, /dev/stdout) is written
// in place (not atomically): replacing it would replace the device node or the link itself.
void write_file_atomic(const std::string& path, const std::string& contents);

// Same, for writers that stream into a file: `write` receives the temporary path and must
// fully write it; on exception the temporary is removed and the error propagates.
void write_file_atomic_with(const std::string& path,
                            const std::function<void(const std::string& tmp_path)>& write);

// Reads a whole file; InputError naming the path if it is missing, a directory or unreadable.
std::string read_file(const std::string& path);

}  // namespace grassaudit
