#include "profiler/busy_union.h"

#include <algorithm>
#include <vector>

namespace tpusim::profiler {

sim::TimeFs BusyUnion::Watermark() const {
  // Twice the longest duration seen leaves room for a somewhat longer instruction.
  const sim::TimeFs margin = 2 * max_dur_;
  return max_end_ > margin ? max_end_ - margin : 0;
}

void BusyUnion::Fold(sim::TimeFs limit, const Sink& sink) {
  if (limit <= folded_until_) return;
  const std::vector<sim::IntervalUnion::Interval>& pieces = union_.pieces();
  size_t done = 0;
  while (done < pieces.size() && pieces[done].second <= limit) {
    sink(pieces[done].first, pieces[done].second);
    ++done;
  }
  if (done < pieces.size() && pieces[done].first < limit) {
    sink(pieces[done].first, limit);
    union_.EraseFront(done);
    union_.ClipFront(limit);
  } else {
    union_.EraseFront(done);
  }
  folded_until_ = limit;
  // Kept pieces are disjoint; wait for the buffer to grow well past them before the
  // next automatic fold so that a stalled watermark cannot make folding quadratic.
  buffered_ = pieces.size();
  next_fold_ = std::max(threshold_, 2 * buffered_);
}

}  // namespace tpusim::profiler
