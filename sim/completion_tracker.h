// Work items numbered 0, 1, 2, ... in the order they start, finishing in any order:
// tracks the lowest number not yet finished. Amortised O(1) per item, no allocation once
// the window of items in flight has reached its largest size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpusim::sim {

class CompletionTracker {
 public:
  // Starts the next item; returns its number.
  uint64_t Start() {
    if (count_ == done_.size()) Grow();
    done_[(first_slot_ + count_) & (done_.size() - 1)] = false;
    ++count_;
    return started_++;
  }
  // Marks item `seq` (started, not yet finished) finished.
  void Finish(uint64_t seq) {
    done_[(first_slot_ + (seq - first_unfinished_)) & (done_.size() - 1)] = true;
    while (count_ > 0 && done_[first_slot_]) {
      first_slot_ = (first_slot_ + 1) & (done_.size() - 1);
      --count_, ++first_unfinished_;
    }
  }
  uint64_t started() const { return started_; }
  // The lowest unfinished number; started() when nothing is in flight.
  uint64_t first_unfinished() const { return first_unfinished_; }

 private:
  void Grow() {  // doubles the ring, keeping the in-flight window in order
    std::vector<bool> bigger(done_.empty() ? 8 : 2 * done_.size(), false);
    for (size_t k = 0; k < count_; ++k) bigger[k] = done_[(first_slot_ + k) & (done_.size() - 1)];
    done_.swap(bigger);
    first_slot_ = 0;
  }

  std::vector<bool> done_;  // ring (power-of-two size) over the in-flight window
  size_t first_slot_ = 0;   // ring slot of first_unfinished_
  size_t count_ = 0;        // items from first_unfinished_ to started_
  uint64_t started_ = 0, first_unfinished_ = 0;
};

}  // namespace tpusim::sim
