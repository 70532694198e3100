#pragma once
// An audit that refuses a model (no verdict is possible for it) says why with a reason the
// program reads, not with words a caller must search for: the suite runner compares the reason,
// the CLI prints the message (one line, exit 2, as for every InputError), and the Python package
// maps each reason to its exception class.
#include <string>

#include "util/error.h"

namespace grassaudit {

class AuditTarget;

class AuditRefusal : public InputError {
 public:
  enum class Reason {
    kState,             // forward changes state it keeps between calls
    kNondeterministic,  // the same input gives different outputs (noise outside torch's RNG)
    kNoIncremental,     // --incremental on a model without init_state / step
  };
  AuditRefusal(Reason reason, const std::string& what) : InputError(what), reason_(reason) {}
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};

// "state" | "nondeterministic" | "incremental": the names an audit suite's expect.refused uses.
const char* refusal_name(AuditRefusal::Reason reason);

// Refuses (kNoIncremental, "<target>: <what is missing>") a target without an incremental path.
void require_incremental(AuditTarget& target);

}  // namespace grassaudit
