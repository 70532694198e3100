#pragma once
// The property search's RapidCheck half (audit/property_search.h) behind a C interface: the
// runner draws each case and shrinks a failing one; the engine checks a case by a callback.
// Only C types cross it, so the runner can live in its own shared object: the Python package
// builds it with RapidCheck and a private libstdc++ (Debian ships RapidCheck only as a static
// library compiled for executables, whose references to libstdc++'s data cannot be resolved
// from a shared object that uses the system's libstdc++), and hands it to the engine as a
// PyCapsule. The CLI links the same runner directly.
#include <cstddef>
#include <cstdint>

extern "C" {

// What a case is drawn from: len in [2, max_len], cut in [1, len), batch in [1, max_batch],
// perturbation in [0, perturbations), mode in [0, modes), seed in [0, 2^31).
struct GaPropertySpace {
  uint64_t seed;     // RapidCheck's seed: the same seed draws the same cases
  int32_t cases;     // cases to draw before the property holds
  int64_t max_len;
  int64_t max_batch;
  int32_t perturbations;
  int32_t modes;
  int64_t min_len;   // the shortest length drawn (>= 2): the shortest the model runs at
};

struct GaPropertyCase {
  int64_t len, cut, batch;
  int32_t perturbation, mode;
  uint64_t seed;
};

// 1: the case holds; 0: it fails. Never throws (the engine keeps its own errors in ctx).
typedef int (*GaPropertyCheck)(void* ctx, const GaPropertyCase* c);

// 0: every case held; 1: a case failed and was shrunk (the last failing case the check saw is
// the shrunk one); -1: the runner failed, its reason in err (NUL-terminated, at most err_len).
typedef int (*GaPropertySearch)(const GaPropertySpace* space, GaPropertyCheck check, void* ctx, char* err,
                                size_t err_len);

// The RapidCheck runner (audit/property_runner_rc.cpp).
int grassaudit_property_search(const GaPropertySpace* space, GaPropertyCheck check, void* ctx, char* err,
                               size_t err_len);

}  // extern "C"
