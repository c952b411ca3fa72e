#include "profiler/busy_union.h"

#include <algorithm>

namespace tpusim::profiler {

void BusyUnion::Add(sim::TimeFs start, sim::TimeFs end) {
  if (end <= start) return;
  if (start < folded_until_) {
    ++late_;
    if (end <= folded_until_) return;
    start = folded_until_;
  }
  buf_.emplace_back(start, end);
  max_end_ = std::max(max_end_, end);
  max_dur_ = std::max(max_dur_, end - start);
}

sim::TimeFs BusyUnion::Watermark() const {
  // Twice the longest duration seen leaves room for a somewhat longer instruction.
  const sim::TimeFs margin = 2 * max_dur_;
  return max_end_ > margin ? max_end_ - margin : 0;
}

void BusyUnion::Fold(sim::TimeFs limit, const Sink& sink) {
  if (limit <= folded_until_) return;
  std::sort(buf_.begin(), buf_.end());
  merged_.clear();
  for (const Interval& iv : buf_) {
    if (!merged_.empty() && iv.first <= merged_.back().second) {
      merged_.back().second = std::max(merged_.back().second, iv.second);
    } else {
      merged_.push_back(iv);
    }
  }
  buf_.clear();
  for (const Interval& iv : merged_) {
    if (iv.second <= limit) {
      sink(iv.first, iv.second);
    } else if (iv.first < limit) {
      sink(iv.first, limit);
      buf_.emplace_back(limit, iv.second);
    } else {
      buf_.push_back(iv);
    }
  }
  folded_until_ = limit;
  // Kept pieces are disjoint; wait for the buffer to grow well past them before the
  // next automatic fold so that a stalled watermark cannot make folding quadratic.
  next_fold_ = std::max(threshold_, 2 * buf_.size());
}

}  // namespace tpusim::profiler
