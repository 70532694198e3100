#pragma once
// Nothing written is ever left half-written: write to "<path>.tmp.<pid>", fsync it, rename it onto
// the real name, fsync the folder (each step a util/write_points.h point).
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

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

// Up-front check for an output file named by `flag` (e.g. "--json"), so a long command does not
// fail only at its end: InputError if `path` is empty or a directory, or its folder is missing,
// not a folder, or not writable. Devices (/dev/stdout) pass.
void check_output_path(const std::string& path, const std::string& flag);

// Removes "<name>.tmp.<pid>" files in `dir` (not recursive) left by a process that no longer
// exists (a writer killed between creating its temporary and renaming it). Temporaries of live
// processes are kept. Returns the removed paths.
std::vector<std::string> remove_stale_temp_files(const std::string& dir);

// Reads a whole file; InputError naming the path if it is missing, a directory or unreadable.
std::string read_file(const std::string& path);

}  // namespace grassaudit
