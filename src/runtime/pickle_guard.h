#pragma once
// Before LibTorch unpickles a zip archive it did not write in this process (a checkpoint, a
// TorchScript file): every pickle record is walked for sizes and memo indices out of range
// (util/pickle_scan.h), so a damaged or hostile file is one line instead of a 20 GB allocation.
#include <string>

namespace grassaudit {

// InputError "<path>: <what> (<the pickle's record>: <what is out of range>)" when a record of the
// archive at `path` is out of range; nothing when the archive cannot be opened (the loader then
// says why in its own words).
void check_archive_pickles(const std::string& path, const std::string& what);

}  // namespace grassaudit
