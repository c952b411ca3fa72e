#include "sim/unit.h"

#include <algorithm>

namespace tpusim::sim {

Unit::Unit(sc_core::sc_module_name name, CoreContext& ctx, isa::Unit id, int stream)
    : sc_module(name), ctx_(ctx), id_(id), stream_(stream), queue_(ctx.cfg->queue_depth) {
  SC_THREAD(Run);
  SC_THREAD(RunSignals);
}

void Unit::WaitUntil(TimeFs t) {
  TimeFs now = ctx_.Now();
  if (t > now) wait(sc_core::sc_time::from_value(t - now));
}

void Unit::Run() {
  try {
    for (;;) {
      while (queue_.empty()) {
        idle_ = true;
        became_idle_.Notify();
        queue_.pushed.Wait();
      }
      idle_ = false;
      Issued it = queue_.Pop();
      TimeFs earliest = std::max(it.ready, last_issue_);
      switch (it.instr.op) {
        case isa::Opcode::kWait:
          DoWait(it, earliest);
          break;
        case isa::Opcode::kSignal:
          DoSignal(it, earliest);
          break;
        default: {
          last_issue_ = Execute(it, earliest);
          queue_.MarkIssued(last_issue_);
        }
      }
    }
  } catch (const SimAbort&) {
    // The run is stopping; ctx_.error says why.
  }
}

// wait u, f, n: blocks this unit until flag f >= n, then takes n from it.
void Unit::DoWait(const Issued& it, TimeFs earliest) {
  int f = it.Flag(it.instr.a[1]);
  int64_t need = it.instr.a[2];
  WaitUntil(earliest);
  TimeFs begin = ctx_.Now();
  while (flags().value(f) < need) {
    blocked_flag_ = f, blocked_need_ = need;
    flags().changed(f).Wait();
  }
  blocked_flag_ = -1;
  flags().Add(f, -need);
  TimeFs now = ctx_.Now();
  ctx_.RecordWait(id_, begin, now, it.instr.a[1], it.step);
  last_issue_ = now + ctx_.Cycles(ctx_.cfg->sync_cycles);
  queue_.MarkIssued(now);
  ExtendDrain(last_issue_);
}

// signal u, f, n: once everything this unit issued before it has finished, flag f += n.
// The queue does not stall: the increment is scheduled for the drain time.
void Unit::DoSignal(const Issued& it, TimeFs earliest) {
  TimeFs at = std::max(earliest, drain_);
  if (!signals_.empty()) at = std::max(at, signals_.back().at);
  signals_.push_back({at, it.Flag(it.instr.a[1]), it.instr.a[2], WorkIssued()});
  ExtendDrain(at);
  signal_added_.Notify();
  last_issue_ = earliest;
  queue_.MarkIssued(earliest);
}

void Unit::WorkFinished() {
  work_finished_.Notify();
  if (idle()) became_idle_.Notify();
}

void Unit::RunSignals() {
  for (;;) {
    while (signals_.empty()) signal_added_.Wait();
    PendingSignal s = signals_.front();
    WaitUntil(s.at);
    while (!WorkDoneUpTo(s.work)) work_finished_.Wait();
    signals_.pop_front();
    flags().Add(s.flag, s.amount);
  }
}

}  // namespace tpusim::sim
