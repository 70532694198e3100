#pragma once
// Every step of a durable write (a file's contents, an fsync, a rename, a folder's fsync, a log
// append, a log truncation) passes through write_point() just before it happens. That gives the
// crash-consistency tests a switch for killing the process exactly there, as an OOM kill, a
// preemption or a power loss would (no destructor, no handler, no flush runs):
//
//   GRASSAUDIT_KILL_AT_WRITE=N     SIGKILL at the N-th point of this process (counted from 1)
//   GRASSAUDIT_WRITE_POINTS=FILE   append "N kind path" for every point reached (the count a
//                                  test needs to kill a run at each of them)
//   GRASSAUDIT_SNAPSHOT_OF=DIR     with GRASSAUDIT_SNAPSHOT_TO=DEST: at every point (or only at
//                                  the N-th, GRASSAUDIT_SNAPSHOT_AT=N) copy DIR to DEST/N and go
//                                  on. The copy is what a SIGKILL at that point leaves of DIR (the
//                                  process stands still inside the point; what it wrote is in
//                                  the files, nothing more), so one run yields the state after a
//                                  kill at each of its points (DEST/N absent: DIR did not exist).
//
// Unset (every normal run), a point costs one branch on a value read once.
#include <string>

namespace grassaudit {

enum class WritePoint {
  kWrite,        // a temporary file's contents (write_file_atomic_with's writer)
  kFsync,        // fsync of a file
  kRename,       // the rename of a temporary onto its real name
  kFsyncDir,     // fsync of the folder that holds a renamed or created file
  kAppend,       // one record appended to a log
  kTruncate,     // a log cut back to what a checkpoint counted
};

const char* write_point_name(WritePoint kind);

// Counts the point and, under the test switch, records it or kills the process.
void write_point(WritePoint kind, const std::string& path);

// fsync(path) (a file or a folder), after write_point(kFsync or kFsyncDir). InputError naming the
// path on failure.
void fsync_file(const std::string& path);
void fsync_dir(const std::string& dir);

// The folder holding `path` ("." for a bare name).
std::string parent_dir_of(const std::string& path);

}  // namespace grassaudit
