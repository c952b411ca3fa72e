// The exact union of half-open time intervals [start, end), kept as sorted, disjoint pieces
// with gaps between them (touching intervals merge). Built for intervals that arrive in
// nearly increasing start order: such an interval merges with the last few pieces in
// place; one reaching further back waits in a side buffer that pieces() sorts and merges.
// Header-only so that the profiler can use it without linking the simulator.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tpusim::sim {

class IntervalUnion {
 public:
  using Interval = std::pair<uint64_t, uint64_t>;

  // Adds [start, end); empty intervals (end <= start) are ignored.
  void Add(uint64_t start, uint64_t end) {
    if (end <= start) return;
    if (pieces_.empty() || start > pieces_.back().second) {  // after the last piece
      pieces_.emplace_back(start, end);
    } else if (start >= pieces_.back().first) {  // overlaps or touches the last piece
      pieces_.back().second = std::max(pieces_.back().second, end);
    } else {
      AddBeforeLast(start, end);
    }
  }

  // The union as sorted, disjoint, non-touching pieces (merges the side buffer first).
  const std::vector<Interval>& pieces() {
    if (!stray_.empty()) MergeStrays();
    return pieces_;
  }

  // After pieces(): forgets the first n pieces.
  void EraseFront(size_t n) {
    pieces_.erase(pieces_.begin(), pieces_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  // After pieces(): the first piece now starts at `start` (inside it).
  void ClipFront(uint64_t start) { pieces_.front().first = start; }

 private:
  // How many trailing pieces an out-of-order interval may scan and move in place.
  static constexpr size_t kMaxInPlace = 32;

  // Add() of an interval starting before the last piece.
  void AddBeforeLast(uint64_t start, uint64_t end) {
    const size_t n = pieces_.size();
    // First piece that overlaps or touches [start, ...): pieces before it end before start.
    size_t i = n - 1;
    while (i > 0 && pieces_[i - 1].second >= start) {
      if (n - i >= kMaxInPlace) {
        stray_.emplace_back(start, end);
        return;
      }
      --i;
    }
    size_t k = i;  // pieces [i, k) overlap or touch [start, end)
    while (k < n && pieces_[k].first <= end) ++k;
    const auto at = pieces_.begin() + static_cast<std::ptrdiff_t>(i);
    if (k == i) {
      pieces_.insert(at, Interval(start, end));
      return;
    }
    pieces_[i] = {std::min(start, pieces_[i].first), std::max(end, pieces_[k - 1].second)};
    pieces_.erase(at + 1, pieces_.begin() + static_cast<std::ptrdiff_t>(k));
  }

  void MergeStrays() {
    std::sort(stray_.begin(), stray_.end());
    scratch_.clear();
    scratch_.reserve(pieces_.size() + stray_.size());
    auto push = [&](const Interval& iv) {
      if (!scratch_.empty() && iv.first <= scratch_.back().second)
        scratch_.back().second = std::max(scratch_.back().second, iv.second);
      else
        scratch_.push_back(iv);
    };
    size_t a = 0, b = 0;
    while (a < pieces_.size() || b < stray_.size()) {
      if (b == stray_.size() || (a < pieces_.size() && pieces_[a] < stray_[b]))
        push(pieces_[a++]);
      else
        push(stray_[b++]);
    }
    pieces_.swap(scratch_);
    stray_.clear();
  }

  std::vector<Interval> pieces_;
  std::vector<Interval> stray_;    // out of order, unsorted
  std::vector<Interval> scratch_;  // reused by MergeStrays
};

}  // namespace tpusim::sim
