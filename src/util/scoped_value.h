#pragma once
// A process- or thread-wide setting held in a variable for the length of a scope: the variable
// takes `value` and gets its previous value back at the end, so scopes nest. The guards of such
// settings (ShardedAuditScope, DropoutRowsScope) hold one and are not copied, as it is not.
#include <utility>

#include "util/non_copyable.h"

namespace grassaudit {

template <class T>
class ScopedValue : NonCopyable {
 public:
  ScopedValue(T& variable, T value) : variable_(variable), saved_(std::move(variable)) {
    variable_ = std::move(value);
  }
  ~ScopedValue() { variable_ = std::move(saved_); }

 private:
  T& variable_;
  T saved_;
};

}  // namespace grassaudit
