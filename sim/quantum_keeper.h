// tlm_utils::tlm_quantumkeeper in integer femtoseconds: the same local time, the same sync
// points and the same waits (wait(SC_ZERO_TIME) too when nothing is pending), without an
// sc_time built per increment or an out-of-line time-stamp call per check.
#pragma once

#include <systemc>
#include <tlm>

#include "sim/activity.h"

namespace tpusim::sim {

// Like tlm_quantumkeeper, call Reset() once the global quantum is set.
class QuantumKeeper {
 public:
  void Inc(TimeFs t) { local_ += t; }
  // Whether the local time has reached the end of the current quantum.
  bool NeedSync() const { return Now() + local_ >= next_sync_; }
  // Waits out the local time (a delta cycle when it is zero), then starts a new quantum.
  void Sync() {
    sc_core::wait(sc_core::sc_time::from_value(local_));
    Reset();
  }
  void Reset() {
    local_ = 0;
    next_sync_ = Now() + tlm::tlm_global_quantum::instance().compute_local_quantum().value();
  }
  TimeFs local_time() const { return local_; }
  TimeFs current_time() const { return Now() + local_; }

 private:
  static TimeFs Now() { return sc_core::sc_get_curr_simcontext()->time_stamp().value(); }
  TimeFs local_ = 0, next_sync_ = 0;
};

}  // namespace tpusim::sim
