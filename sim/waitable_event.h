// An sc_event that is notified only when a process waits on it. The units' hot paths
// (queue pushes, issues, flag changes) notify on every instruction; a delta notification
// nobody waits for still costs the kernel a delta-event entry and a trigger. Every wait is
// a `while (!condition) Wait()` loop whose condition the notifier changes before it
// notifies, so a notification with no waiter is never needed: a process checks the
// condition and calls Wait() without yielding in between.
#pragma once

#include <systemc>

namespace tpusim::sim {

class WaitableEvent {
 public:
  // Blocks the calling thread until the next Notify().
  void Wait() {
    ++waiters_;
    sc_core::wait(event_);
    --waiters_;
  }
  // Wakes the waiting threads in the next delta cycle; nothing when none waits.
  void Notify() {
    if (waiters_ > 0) event_.notify(sc_core::SC_ZERO_TIME);
  }
  bool has_waiters() const { return waiters_ > 0; }

 private:
  sc_core::sc_event event_;
  int waiters_ = 0;
};

}  // namespace tpusim::sim
