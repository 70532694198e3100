#pragma once
// The bookkeeping of AuditTarget's state tracking (audit/audit_target.h: snapshot_state,
// restore_state, end_state_tracking, hold_state) that every file target with state shares: the
// record, whether it goes back after every forward, and the hold. The target records and puts
// back its own kind of state (`Value`: a graph's buffer, a TorchScript attribute).
#include <string>
#include <utility>
#include <vector>

namespace grassaudit {

template <class Value>
class TrackedState {
 public:
  // Name and recorded value of each piece of state (snapshot_state fills it, then calls start).
  std::vector<std::pair<std::string, Value>> record;

  // The record is made; with `restore` it goes back after every forward from now on.
  void start(bool restore) {
    tracking_ = true;
    restore_ = restore;
  }
  // After a forward: whether the record goes back now (never while held).
  bool restores_after_forward() const { return restore_ && !held_; }
  // end_state_tracking: the record goes back (put_back: the target's restore_state) and tracking stops.
  template <class PutBack>
  void end(PutBack put_back) {
    if (!tracking_) return;
    put_back();
    tracking_ = restore_ = held_ = false;
    record.clear();
  }
  // hold_state: releasing the hold puts the record back once.
  template <class PutBack>
  void hold(bool on, PutBack put_back) {
    const bool release = held_ && !on;
    held_ = on;
    if (release && restore_) put_back();
  }

 private:
  bool tracking_ = false, restore_ = false, held_ = false;
};

}  // namespace grassaudit
