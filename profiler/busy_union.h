// The exact union of busy intervals of one core across all of its units, computed by a
// sweep line over buffered intervals and folded into running totals so that memory stays
// bounded on long runs.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "sim/activity.h"

namespace tpusim::profiler {

class BusyUnion {
 public:
  using Interval = std::pair<sim::TimeFs, sim::TimeFs>;
  using Sink = std::function<void(sim::TimeFs start, sim::TimeFs end)>;

  // Buffers [start, end). Amortised O(1): no allocation beyond vector growth.
  void Add(sim::TimeFs start, sim::TimeFs end);

  // Emits, through `sink`, the disjoint pieces of the union that lie below `limit`, in
  // increasing time order, and forgets them. Work above `limit` stays buffered.
  void Fold(sim::TimeFs limit, const Sink& sink);

  // A time below which no later record should start: records are reported either at
  // issue or at completion, and no instruction seen so far lasted longer than max_dur.
  sim::TimeFs Watermark() const;

  // True when enough intervals are buffered that an automatic fold is worthwhile.
  bool ShouldFold() const { return buf_.size() >= next_fold_; }
  void set_fold_threshold(size_t n) { threshold_ = next_fold_ = n; }

  // Records that arrived after the time they cover had been folded (then clipped).
  uint64_t late_records() const { return late_; }
  size_t buffered() const { return buf_.size(); }

 private:
  std::vector<Interval> buf_;
  std::vector<Interval> merged_;  // scratch, reused
  sim::TimeFs folded_until_ = 0;
  sim::TimeFs max_end_ = 0;
  sim::TimeFs max_dur_ = 0;
  size_t threshold_ = 1 << 16;
  size_t next_fold_ = 1 << 16;
  uint64_t late_ = 0;
};

}  // namespace tpusim::profiler
