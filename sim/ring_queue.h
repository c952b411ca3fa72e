// A FIFO on a power-of-two ring that grows by doubling: push and pop move the element and
// allocate only while the queue reaches a new largest size (std::deque allocates a node
// every few elements of a large type).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace tpusim::sim {

template <typename T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void push_back(T item) {
    if (size_ == ring_.size()) Grow();
    ring_[(head_ + size_) & (ring_.size() - 1)] = std::move(item);
    ++size_;
  }
  T& front() { return ring_[head_]; }
  // Removes the front element and returns it. The slot keeps the moved-from husk (empty for
  // shared_ptr and vector members), so nothing popped stays alive in the ring.
  T pop_front() {
    T item = std::move(ring_[head_]);
    head_ = (head_ + 1) & (ring_.size() - 1);
    --size_;
    return item;
  }

 private:
  void Grow() {
    std::vector<T> bigger(ring_.empty() ? 8 : 2 * ring_.size());
    for (size_t k = 0; k < size_; ++k)
      bigger[k] = std::move(ring_[(head_ + k) & (ring_.size() - 1)]);
    ring_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> ring_;
  size_t head_ = 0, size_ = 0;
};

}  // namespace tpusim::sim
