#pragma once
// What an audit spends: forward passes (and the tokens they carry) by dtype, dtype conversions,
// and wall seconds, per section (a check, or the precision floor inside whichever check first
// needed it). The audit running on a thread owns one CostMeter (CostScope); the places that run
// the model or convert it record into it (record_forward, record_conversion) and CostSection
// charges what happens inside it to its name, exclusive of the sections nested in it: the floor
// measured during the length check is the floor's, not the length check's.
//
// A section or a record with no meter installed does nothing: the probes also run outside an
// audit (tests, the trainer's own calls).
#include <c10/core/ScalarType.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "util/non_copyable.h"

namespace grassaudit {

struct ForwardCount {
  int64_t passes = 0;
  int64_t tokens = 0;  // rows x length of every pass
  ForwardCount& operator+=(const ForwardCount& o) {
    passes += o.passes;
    tokens += o.tokens;
    return *this;
  }
};

// Forwards by dtype name ("float32", "float64", ...) and conversions.
struct ForwardLedger {
  std::map<std::string, ForwardCount> by_dtype;
  int64_t conversions = 0;
  ForwardCount total() const;
  ForwardLedger& operator+=(const ForwardLedger& o);
};

struct SectionCost {
  std::string name;
  double seconds = 0;
  ForwardLedger forwards;
};

class CostMeter {
 public:
  // Sections in the order they were first entered, each with its exclusive seconds and forwards.
  const std::vector<SectionCost>& sections() const { return sections_; }
  // Everything recorded, whatever section it fell in (or none).
  const ForwardLedger& total() const { return total_; }

  void record_forward(at::ScalarType dtype, int64_t rows, int64_t len);
  void record_conversion();
  // Adds what another meter spent (a nested audit) to the open section, as if recorded here.
  void absorb(const CostMeter& other);

 private:
  friend class CostSection;
  using Clock = std::chrono::steady_clock;
  struct Frame {
    std::string name;
    Clock::time_point start;
    double nested_seconds = 0;
    ForwardLedger own;  // recorded while this frame was the innermost
  };
  void enter(const std::string& name);
  void leave();
  SectionCost& section(const std::string& name);
  std::vector<Frame> stack_;
  std::vector<SectionCost> sections_;
  ForwardLedger total_;
};

// Installs `meter` as this thread's audit meter for its lifetime (the previous one comes back
// after it: a nested audit, the structural pass's, has its own).
class CostScope : NonCopyable {
 public:
  explicit CostScope(CostMeter& meter);
  ~CostScope();

 private:
  CostMeter* previous_;
};

// Charges the time and forwards inside it to `name` in the current meter (nothing without one).
class CostSection : NonCopyable {
 public:
  explicit CostSection(const std::string& name);
  ~CostSection();

 private:
  CostMeter* meter_;
};

// One forward of `rows` x `len` in `dtype` (the target's dtype), into the current meter.
// "float64", "float32", or LibTorch's name of another dtype: how a dtype is counted and reported.
std::string dtype_name(at::ScalarType t);

void record_forward(at::ScalarType dtype, int64_t rows, int64_t len);
// One conversion of the model between dtypes, into the current meter.
void record_conversion();

}  // namespace grassaudit
