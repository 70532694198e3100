#pragma once
// Data-parallel runs print once: on ranks other than 0, std::cout and std::cerr go nowhere while
// a RankOutputGuard lives. It restores them when the scope ends, also by an exception, so an
// error line (a lost rank, a config mismatch) still reaches the terminal from every rank.
#include <iostream>
#include <streambuf>

#include "runtime/distributed.h"
#include "util/non_copyable.h"

namespace grassaudit {

class RankOutputGuard : NonCopyable {
 public:
  RankOutputGuard() {
    if (dist::is_main()) return;
    out_ = std::cout.rdbuf(&null_);
    err_ = std::cerr.rdbuf(&null_);
  }
  ~RankOutputGuard() {
    if (out_) std::cout.rdbuf(out_);
    if (err_) std::cerr.rdbuf(err_);
  }

 private:
  struct NullBuffer : std::streambuf {
    int overflow(int c) override { return c == traits_type::eof() ? 0 : c; }
  };
  NullBuffer null_;
  std::streambuf* out_ = nullptr;
  std::streambuf* err_ = nullptr;
};

}  // namespace grassaudit
