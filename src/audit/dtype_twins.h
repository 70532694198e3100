#pragma once
// A model's tensors switched between its own dtype and float64 without a fresh copy per switch.
// The audit moves a model between the float32 screen and the float64 decision several times; a
// fresh `t.to(dtype)` each time allocates (and page-faults through) a whole model's worth of
// memory again. Here the first switch to a dtype allocates that dtype's copy, and every later
// switch writes the current values into the copy kept from before (they may have changed in
// place since: a redrawn zero, a jittered parameter put back) and hands it over: one copy of
// the model per dtype per audit, each switch a single pass over memory that exists.
//
// The values are those of `t.to(dtype)`: the same conversion (copy_ casts as to() does).
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <map>
#include <string>

namespace grassaudit {

class DtypeTwins {
 public:
  // `current` in `dtype`: its values in the copy this object kept for `key` when one of the right
  // dtype and shape exists, else in a fresh one. Keeps `current`'s own memory (detached, so a
  // later set_data on the caller's tensor does not move it) for the switch back.
  at::Tensor convert(const std::string& key, const at::Tensor& current, at::ScalarType dtype);
  // Frees the kept copies (the tensors the caller holds stay as they are).
  void clear() { spare_.clear(); }

 private:
  std::map<std::string, at::Tensor> spare_;
};

}  // namespace grassaudit
