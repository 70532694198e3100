// The property search's runner on RapidCheck (audit/property_runner.h). No torch here: this file
// also builds alone into the Python package's grassaudit._property_runner, with RapidCheck and a
// private libstdc++.
#include <rapidcheck.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "audit/property_runner.h"
#include "util/non_copyable.h"

namespace {

// RapidCheck's default listener reports progress on stderr; the audit prints its own summary.
class QuietListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

class StderrSilenced : grassaudit::NonCopyable {
 public:
  StderrSilenced() : old_(std::cerr.rdbuf(nullptr)) {}
  ~StderrSilenced() {
    std::cerr.rdbuf(old_);
    std::cerr.clear();
  }

 private:
  std::streambuf* old_;
};

void set_error(char* err, size_t err_len, const std::string& what) {
  if (!err || err_len == 0) return;
  const size_t n = std::min(what.size(), err_len - 1);
  std::memcpy(err, what.data(), n);
  err[n] = '\0';
}

}  // namespace

extern "C" int grassaudit_property_search(const GaPropertySpace* space, GaPropertyCheck check, void* ctx, char* err,
                                          size_t err_len) {
  try {
    const GaPropertySpace s = *space;
    std::vector<int32_t> perturbations;
    for (int32_t p = 0; p < s.perturbations; ++p) perturbations.push_back(p);
    // The draw order is the case's field order; the cut's range depends on the length, so the
    // length is drawn first.
    auto property = [&]() {
      GaPropertyCase c{};
      c.len = *rc::gen::inRange<int64_t>(std::max<int64_t>(2, s.min_len), s.max_len + 1);
      c.cut = *rc::gen::inRange<int64_t>(1, c.len);
      c.batch = *rc::gen::inRange<int64_t>(1, s.max_batch + 1);
      c.perturbation = *rc::gen::elementOf(perturbations);  // picked, not shrunk
      c.mode = *rc::gen::inRange<int32_t>(0, s.modes);
      c.seed = *rc::gen::inRange<uint64_t>(0, 1ULL << 31);
      return check(ctx, &c) != 0;
    };
    rc::detail::TestParams params;
    params.seed = s.seed;
    params.maxSuccess = s.cases;
    QuietListener quiet;
    // The seed above is the one used; RapidCheck's global configuration, loaded on first use,
    // draws a random seed of its own (unused here) and prints it to stderr: silenced.
    auto silence = std::make_unique<StderrSilenced>();
    const auto result = rc::detail::checkTestable(property, rc::detail::TestMetadata{}, params, quiet);
    silence.reset();
    return result.template is<rc::detail::FailureResult>() ? 1 : 0;
  } catch (const std::exception& e) {
    set_error(err, err_len, std::string("the property runner failed: ") + e.what());
  } catch (...) {
    set_error(err, err_len, "the property runner failed");
  }
  return -1;
}
