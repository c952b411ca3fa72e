// The exact union of busy intervals of one core across all of its units, kept as it grows
// (sim::IntervalUnion) and folded into running totals so that memory stays bounded on
// long runs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

#include "sim/activity.h"
#include "sim/interval_union.h"

namespace tpusim::profiler {

class BusyUnion {
 public:
  using Sink = std::function<void(sim::TimeFs start, sim::TimeFs end)>;

  // Adds [start, end). Amortised O(1) for intervals in nearly increasing start order.
  void Add(sim::TimeFs start, sim::TimeFs end) {
    if (end <= start) return;
    if (start < folded_until_) {
      ++late_;
      if (end <= folded_until_) return;
      start = folded_until_;
    }
    union_.Add(start, end);
    ++buffered_;
    max_end_ = std::max(max_end_, end);
    max_dur_ = std::max(max_dur_, end - start);
  }

  // Emits, through `sink`, the disjoint pieces of the union that lie below `limit`, in
  // increasing time order, and forgets them. Work above `limit` stays buffered.
  void Fold(sim::TimeFs limit, const Sink& sink);

  // A time below which no later record should start: records are reported either at
  // issue or at completion, and no instruction seen so far lasted longer than max_dur.
  sim::TimeFs Watermark() const;

  // True when enough intervals are buffered that an automatic fold is worthwhile.
  bool ShouldFold() const { return buffered_ >= next_fold_; }
  void set_fold_threshold(size_t n) { threshold_ = next_fold_ = n; }

  // Records that arrived after the time they cover had been folded (then clipped).
  uint64_t late_records() const { return late_; }
  // Intervals buffered since the last fold, plus the pieces that fold kept (the count
  // that decides when to fold; overlapping intervals are stored merged).
  size_t buffered() const { return buffered_; }

 private:
  sim::IntervalUnion union_;
  size_t buffered_ = 0;
  sim::TimeFs folded_until_ = 0;
  sim::TimeFs max_end_ = 0;
  sim::TimeFs max_dur_ = 0;
  size_t threshold_ = 1 << 16;
  size_t next_fold_ = 1 << 16;
  uint64_t late_ = 0;
};

}  // namespace tpusim::profiler
