#pragma once

namespace grassaudit {

// A private base for scoped guards and owners of one resource: a copy would undo or release the
// same thing twice, so copying and assigning are deleted (and with them the implicit moves).
class NonCopyable {
 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;

 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;
};

}  // namespace grassaudit
