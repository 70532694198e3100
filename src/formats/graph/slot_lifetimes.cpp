#include "formats/graph/slot_lifetimes.h"

#include <cstddef>

namespace grassaudit {

std::vector<std::vector<int>> releases_after_last_read(int nslots, const std::vector<std::vector<int>>& reads,
                                                       const std::vector<int>& kept) {
  // last[s]: the step that reads s last; `end` (one past the last step) for a kept slot.
  const int end = static_cast<int>(reads.size());
  std::vector<int> last(static_cast<std::size_t>(nslots), -1);
  for (int i = 0; i < end; ++i)
    for (int s : reads[static_cast<std::size_t>(i)])
      if (s >= 0) last[static_cast<std::size_t>(s)] = i;
  for (int s : kept)
    if (s >= 0) last[static_cast<std::size_t>(s)] = end;
  std::vector<std::vector<int>> release(reads.size());
  for (int s = 0; s < nslots; ++s)
    if (last[static_cast<std::size_t>(s)] >= 0 && last[static_cast<std::size_t>(s)] < end)
      release[static_cast<std::size_t>(last[static_cast<std::size_t>(s)])].push_back(s);
  return release;
}

}  // namespace grassaudit
