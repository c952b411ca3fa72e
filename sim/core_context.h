// State shared by the units of one TensorCore: configuration, sync flags, memories,
// the program, and where activity and errors go.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <type_traits>
#include <utility>
#include <vector>

#include "isa/program.h"
#include "sim/activity.h"
#include "sim/config.h"
#include "sim/interval_union.h"
#include "sim/memory.h"
#include "sim/ring_queue.h"
#include "sim/timing.h"
#include "sim/waitable_event.h"

namespace tpusim::sim {

// An instruction handed by the sequencer to a unit queue, with its register operands
// already read (the scalar unit is the address generator).
struct Issued {
  isa::Instr instr;
  uint32_t pc = 0;
  TimeFs ready = 0;                            // when the sequencer put it in the queue
  std::array<int64_t, isa::kMaxOperands> v{};  // resolved operands (register values)
  uint32_t step = 0;
  uint8_t stream = 0;  // the issuing sequencer's (0 main, 1 collective)
  // The sequencer's kernel window when it issued this (isa `window`): the flag bank its
  // flags name and the bytes added to every VMEM address of this core it names.
  uint8_t bank = 0;
  uint32_t vmem_base = 0;
  int Flag(int f) const { return isa::BankedFlag(f, bank); }
  // vloop only: the loop body, its operands resolved when the loop was issued.
  std::shared_ptr<const std::vector<Issued>> body;
};

// A unit's in-order instruction queue of fixed depth. The sequencer stalls on a full
// queue: slot k is free once instruction k - depth has issued (start time recorded).
class UnitQueue {
 public:
  explicit UnitQueue(int depth) : depth_(depth), issue_ring_(depth, 0) {}
  bool empty() const { return items_.empty(); }
  void Push(Issued item) {
    items_.push_back(std::move(item));
    ++pushed_count_;
    if (++push_slot_ == depth_) push_slot_ = 0;
    pushed.Notify();
  }
  Issued Pop() { return items_.pop_front(); }
  // Called by the unit when the popped instruction issues.
  void MarkIssued(TimeFs t) {
    issue_ring_[issue_slot_] = t;
    if (++issue_slot_ == depth_) issue_slot_ = 0;
    ++issued_count_;
    issued.Notify();
  }
  // Whether the instruction that frees the next Push's slot has issued.
  bool NextSlotKnown() const {
    return pushed_count_ < depth_ || issued_count_ > pushed_count_ - depth_;
  }
  // Earliest time the next Push may happen (when NextSlotKnown()).
  TimeFs NextSlotFreeAt() const { return pushed_count_ < depth_ ? 0 : issue_ring_[push_slot_]; }
  WaitableEvent pushed, issued;

 private:
  uint64_t depth_;
  RingQueue<Issued> items_;
  uint64_t pushed_count_ = 0, issued_count_ = 0;
  // Ring positions: pushed_count_ % depth_ and issued_count_ % depth_.
  uint64_t push_slot_ = 0, issue_slot_ = 0;
  std::vector<TimeFs> issue_ring_;  // issue time of instruction k at k % depth_
};

// "f3", or "f3 (bank 1)": the flag stored at `storage` (isa::BankedFlag), as deadlock
// reports name it.
inline std::string FlagName(int storage) {
  const int f = storage % isa::kNumFlags;
  return "f" + std::to_string(f) + (storage != f ? " (bank 1)" : "");
}

// A core's counting flags, indexed by storage (isa::BankedFlag of the flag and bank).
class SyncFlags {
 public:
  int64_t value(int f) const { return value_[f]; }
  void Add(int f, int64_t n) {
    value_[f] += n;
    changed_[f].Notify();
  }
  void Set(int f, int64_t n) { Add(f, n - value_[f]); }
  // Whether the other instruction stream's xsignal has added to flag f (main stream: a
  // wait on it waits for a collective).
  void MarkCollective(int f) { collective_ |= uint64_t{1} << f; }
  bool collective(int f) const { return collective_ >> f & 1; }
  WaitableEvent& changed(int f) { return changed_[f]; }

 private:
  // Indexed by isa::BankedFlag: both banks of the banked flags.
  std::array<int64_t, isa::kPhysicalFlags> value_{};
  uint64_t collective_ = 0;
  std::array<WaitableEvent, isa::kPhysicalFlags> changed_;
};

// Per-unit busy accounting kept by the simulator itself (the exec report).
// A unit's busy time: the length of the union of its instructions' intervals, which may
// arrive out of order (DMA engines finish out of order). Memory stays bounded on long
// runs: intervals that ended well before the present (more than kFoldMargin and four of
// the longest instructions seen) are folded into a total; a record reaching back into
// folded time is clipped (late_records counts them). Folding happens whenever the list of
// recorded intervals (an interval extending the latest one is not a new entry) outgrows
// twice its size after the previous fold plus 4096.
class UnitStats {
 public:
  // `now` (the current simulated time, any callable returning TimeFs) is read only when
  // old intervals are folded.
  template <typename NowFn, typename = std::enable_if_t<std::is_invocable_v<NowFn>>>
  void AddBusy(TimeFs start, TimeFs end, NowFn&& now);
  void AddBusy(TimeFs start, TimeFs end, TimeFs now) {
    AddBusy(start, end, [now] { return now; });
  }
  TimeFs BusyTotal();                           // length of the union of all intervals
  void CountInstruction() { ++instructions_; }  // an instruction whose interval is not kept
  uint64_t instructions() const { return instructions_; }
  uint64_t late_records() const { return late_; }

 private:
  static constexpr TimeFs kFoldMargin = 1'000'000'000'000;  // 1 ms of simulated time
  void Compact(TimeFs fold_before);
  IntervalUnion union_;
  // The list's latest entry and length, which decide when to fold.
  std::pair<TimeFs, TimeFs> tail_{};
  bool has_tail_ = false;
  size_t entries_ = 0, compacted_size_ = 0;
  uint64_t instructions_ = 0, late_ = 0;
  TimeFs folded_total_ = 0, folded_until_ = 0, max_duration_ = 0;
};

template <typename NowFn, typename>
void UnitStats::AddBusy(TimeFs start, TimeFs end, NowFn&& now) {
  ++instructions_;
  if (end <= start) return;
  max_duration_ = std::max(max_duration_, end - start);
  if (start < folded_until_) {  // reaches into folded time: count only what is new
    ++late_;
    if (end <= folded_until_) return;
    start = folded_until_;
  }
  union_.Add(start, end);
  if (has_tail_ && tail_.second >= start && tail_.first <= start) {  // extends the latest
    tail_.second = std::max(tail_.second, end);
    return;
  }
  tail_ = {start, end};
  has_tail_ = true;
  if (++entries_ > 2 * compacted_size_ + 4096) {
    const TimeFs margin = std::max(kFoldMargin, 4 * max_duration_);
    const TimeFs t = now();
    Compact(t > margin ? t - margin : 0);
  }
}

struct CoreContext {
  int core = 0;
  const CoreConfig* cfg = nullptr;
  const isa::Program* program = nullptr;
  bool functional = true;
  SyncFlags flags;             // the main stream's
  SyncFlags collective_flags;  // the collective stream's (isa::Program::collective_entry)
  // Stream 0 is the main stream, 1 the collective stream.
  SyncFlags& Flags(int stream) { return stream ? collective_flags : flags; }
  LinearMemory* vmem = nullptr;
  LinearMemory* smem = nullptr;
  SparseMemory* hbm = nullptr;
  IActivitySink* sink = nullptr;               // may be null
  std::vector<CoreContext*>* peers = nullptr;  // every core of the board, by index
  std::array<UnitStats, isa::kNumUnits> stats;
  bool unit_busy = true;         // RunOptions::unit_busy: stats keep busy intervals
  std::string* error = nullptr;  // first error of the run (shared by all cores)

  // The context of core c (this one when there is no board).
  CoreContext* Peer(int c) {
    if (peers && c >= 0 && c < static_cast<int>(peers->size())) return (*peers)[c];
    return c == core ? this : nullptr;
  }
  // sc_time_stamp(), read inline from the simulation context (a hot path).
  TimeFs Now() const { return sc_core::sc_get_curr_simcontext()->time_stamp().value(); }
  // n cycles in femtoseconds: CyclesToFs(*cfg, n), with cfg's cycle length cached.
  TimeFs Cycles(int64_t n) const {
    if (cycle_cfg_ != cfg) {
      cycle_cfg_ = cfg;
      cycle_fs_ = cfg->cycle_fs();
    }
    return CyclesToFs(cycle_fs_, n);
  }
  // Records one busy interval; counts_as_busy=false records it for the profiler only.
  void Record(isa::Unit unit, const Issued& it, TimeFs start, TimeFs end, double flops,
              uint64_t hbm_bytes, bool counts_as_busy = true);
  void RecordWait(isa::Unit unit, TimeFs start, TimeFs end, int flag, uint32_t step);
  // Stops the run with `message` prefixed by the core, pc and instruction.
  [[noreturn]] void Fail(const Issued& it, const std::string& message);
  [[noreturn]] void Fail(uint32_t pc, const std::string& message);

 private:
  mutable const CoreConfig* cycle_cfg_ = nullptr;  // the config cycle_fs_ was read from
  mutable double cycle_fs_ = 0;
};

// Thrown by Fail() to unwind a unit's thread; the thread catches it and stops.
struct SimAbort {};

}  // namespace tpusim::sim
