// BusyUnion emits exactly the pieces, fold decisions and late counts of the algorithm it
// replaced (sort the whole buffer at every fold), kept here as the reference.
#include "profiler/busy_union.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace tpusim::profiler {
namespace {

using sim::TimeFs;
using Piece = std::pair<TimeFs, TimeFs>;

// The BusyUnion of before.
class ReferenceBusyUnion {
 public:
  void Add(TimeFs start, TimeFs end) {
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
  TimeFs Watermark() const {
    const TimeFs margin = 2 * max_dur_;
    return max_end_ > margin ? max_end_ - margin : 0;
  }
  void Fold(TimeFs limit, std::vector<Piece>& sink) {
    if (limit <= folded_until_) return;
    std::sort(buf_.begin(), buf_.end());
    std::vector<Piece> merged;
    for (const Piece& iv : buf_) {
      if (!merged.empty() && iv.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, iv.second);
      else
        merged.push_back(iv);
    }
    buf_.clear();
    for (const Piece& iv : merged) {
      if (iv.second <= limit) {
        sink.push_back(iv);
      } else if (iv.first < limit) {
        sink.emplace_back(iv.first, limit);
        buf_.emplace_back(limit, iv.second);
      } else {
        buf_.push_back(iv);
      }
    }
    folded_until_ = limit;
    next_fold_ = std::max(threshold_, 2 * buf_.size());
  }
  bool ShouldFold() const { return buf_.size() >= next_fold_; }
  void set_fold_threshold(size_t n) { threshold_ = next_fold_ = n; }
  uint64_t late_records() const { return late_; }
  size_t buffered() const { return buf_.size(); }

 private:
  std::vector<Piece> buf_;
  TimeFs folded_until_ = 0, max_end_ = 0, max_dur_ = 0;
  size_t threshold_ = 1 << 16, next_fold_ = 1 << 16;
  uint64_t late_ = 0;
};

// Busy records of one core's units: in-order timelines reported at issue or completion,
// occasional long instructions and records reaching far back.
std::vector<Piece> CoreLikeStream(uint32_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::vector<TimeFs> unit_time(5, 0);
  std::vector<Piece> out;
  for (int i = 0; i < n; ++i) {
    const size_t u = rng() % unit_time.size();
    TimeFs dur = 50 + rng() % 100;
    if (rng() % 200 == 0) dur *= 30;
    const TimeFs start = unit_time[u] + (rng() % 4 == 0 ? rng() % 300 : 0);
    unit_time[u] = start + dur;
    if (rng() % 300 == 0) {
      const TimeFs back = rng() % 50'000;
      out.emplace_back(start > back ? start - back : 0, start + 1);
    }
    out.emplace_back(start, start + dur);
  }
  return out;
}

TEST(BusyUnion, FoldsLikeTheSortEverythingAlgorithm) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    for (size_t threshold : {size_t{16}, size_t{1000}}) {
      BusyUnion un;
      ReferenceBusyUnion ref;
      un.set_fold_threshold(threshold);
      ref.set_fold_threshold(threshold);
      std::vector<Piece> got, want;
      auto sink = [&](TimeFs s, TimeFs e) { got.emplace_back(s, e); };
      const std::vector<Piece> stream = CoreLikeStream(seed, 20000);
      for (size_t i = 0; i < stream.size(); ++i) {
        un.Add(stream[i].first, stream[i].second);
        ref.Add(stream[i].first, stream[i].second);
        ASSERT_EQ(un.ShouldFold(), ref.ShouldFold()) << "seed " << seed << " at " << i;
        ASSERT_EQ(un.buffered(), ref.buffered()) << "seed " << seed << " at " << i;
        ASSERT_EQ(un.Watermark(), ref.Watermark());
        if (un.ShouldFold()) {  // as the Recorder does
          un.Fold(un.Watermark(), sink);
          ref.Fold(ref.Watermark(), want);
        }
        if (i % 4999 == 0) {  // as a monitor flush does
          un.Fold(stream[i].first, sink);
          ref.Fold(stream[i].first, want);
        }
      }
      un.Fold(~TimeFs{0}, sink);
      ref.Fold(~TimeFs{0}, want);
      EXPECT_EQ(got, want) << "seed " << seed;
      EXPECT_EQ(un.late_records(), ref.late_records()) << "seed " << seed;
      EXPECT_GT(un.late_records(), 0u) << "seed " << seed;
    }
  }
}

TEST(BusyUnion, SplitsThePieceAcrossTheLimitAndKeepsTheRest) {
  BusyUnion un;
  std::vector<Piece> got;
  auto sink = [&](TimeFs s, TimeFs e) { got.emplace_back(s, e); };
  un.Add(0, 10);
  un.Add(5, 30);
  un.Add(40, 50);
  un.Fold(20, sink);
  EXPECT_EQ(got, (std::vector<Piece>{{0, 20}}));
  EXPECT_EQ(un.buffered(), 2u);  // [20,30) and [40,50)
  un.Add(15, 25);                // reaches into folded time: clipped to [20,25)
  EXPECT_EQ(un.late_records(), 1u);
  un.Fold(100, sink);
  EXPECT_EQ(got, (std::vector<Piece>{{0, 20}, {20, 30}, {40, 50}}));
}

}  // namespace
}  // namespace tpusim::profiler
