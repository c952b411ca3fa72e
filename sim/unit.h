// Base of the queued units (DMA, MXU, VPU): an SC_THREAD that takes instructions in
// order from its queue, handles wait/signal, and hands the rest to Execute(). Units
// keep their own timeline analytically (annotated time) and only wait() in simulated
// time when they must meet another unit: at a sync flag or a DMA chunk.
#pragma once

#include <deque>
#include <systemc>

#include "sim/core_context.h"

namespace tpusim::sim {

class Unit : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Unit);
  // `stream`: the instruction stream whose queue this is (0 main, 1 collective), whose
  // flags its waits and signals use.
  Unit(sc_core::sc_module_name name, CoreContext& ctx, isa::Unit id, int stream = 0);

  UnitQueue& queue() { return queue_; }
  isa::Unit id() const { return id_; }
  int stream() const { return stream_; }
  SyncFlags& flags() { return ctx_.Flags(stream_); }
  // True when the queue is empty, the thread is waiting for work and nothing it started
  // is still running (a DMA copy in flight).
  bool idle() const { return idle_ && queue_.empty() && WorkDoneUpTo(WorkIssued()); }
  // When everything issued so far has finished.
  TimeFs drain_time() const { return drain_; }
  // The flag this unit is blocked on, or -1 (for deadlock reports).
  int blocked_flag() const { return blocked_flag_; }
  int64_t blocked_need() const { return blocked_need_; }
  WaitableEvent& became_idle() { return became_idle_; }

 protected:
  // Executes one non-sync instruction; `earliest` is when in-order issue allows it to
  // start. Returns its issue (start) time.
  virtual TimeFs Execute(const Issued& it, TimeFs earliest) = 0;
  // Moves this thread's simulated time forward to t (no-op if already there).
  void WaitUntil(TimeFs t);
  void ExtendDrain(TimeFs t) { drain_ = std::max(drain_, t); }
  // Work that outlives its instruction's issue (DMA copies run on engines): how many items
  // were started, and whether the first `n` of them have finished. A signal counts them
  // as work issued before it; a subclass calls WorkFinished() when one ends.
  virtual uint64_t WorkIssued() const { return 0; }
  virtual bool WorkDoneUpTo(uint64_t /*n*/) const { return true; }
  void WorkFinished();

  CoreContext& ctx_;
  isa::Unit id_;
  int stream_;

 private:
  void Run();
  void RunSignals();
  void DoWait(const Issued& it, TimeFs earliest);
  void DoSignal(const Issued& it, TimeFs earliest);

  UnitQueue queue_;
  TimeFs last_issue_ = 0;
  TimeFs drain_ = 0;
  bool idle_ = true;
  int blocked_flag_ = -1;
  int64_t blocked_need_ = 0;
  WaitableEvent became_idle_;
  // Signals waiting for the work before them to finish: (time, flag, amount), in time order.
  struct PendingSignal {
    TimeFs at;
    int flag;
    int64_t amount;
    uint64_t work;  // WorkIssued() when the signal was issued
  };
  std::deque<PendingSignal> signals_;
  WaitableEvent signal_added_, work_finished_;
};

}  // namespace tpusim::sim
