// Busy-interval accounting: IntervalUnion equals a sort-and-merge of everything added, and
// UnitStats gives exactly the totals and late counts of the algorithm it replaced (sort
// the whole interval list at every fold), kept here as the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "sim/core_context.h"
#include "sim/interval_union.h"

namespace tpusim::sim {
namespace {

using Interval = IntervalUnion::Interval;

std::vector<Interval> SortAndMerge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

// Intervals as units report them: the present advances by about one instruction per
// record; records start up to two instructions before it (reported at completion, or by
// DMA engines finishing out of order), leaving gaps and overlaps; a few are long, a few
// reach far back, and some are empty.
std::vector<Interval> UnitLikeStream(uint32_t seed, int n, TimeFs typical) {
  std::mt19937_64 rng(seed);
  std::vector<Interval> out;
  TimeFs now = 10 * typical;
  for (int i = 0; i < n; ++i) {
    now += typical / 2 + rng() % typical;
    TimeFs dur = typical / 2 + rng() % typical;
    if (rng() % 100 == 0) dur *= 40;
    const TimeFs start = now - rng() % (2 * typical);
    if (rng() % 500 == 0) {  // a short record far back
      const TimeFs back = std::min(start, rng() % (1000 * typical));
      out.emplace_back(start - back, start - back + dur);
    }
    out.emplace_back(start, start + dur);
    if (rng() % 7 == 0) out.emplace_back(start, start);
  }
  return out;
}

TEST(IntervalUnion, TouchingIntervalsMergeAndGapsStay) {
  IntervalUnion u;
  u.Add(10, 20);
  u.Add(20, 30);  // touches
  u.Add(40, 50);
  u.Add(5, 5);  // empty
  EXPECT_EQ(u.pieces(), (std::vector<Interval>{{10, 30}, {40, 50}}));
}

TEST(IntervalUnion, OutOfOrderIntervalInsertsOrBridgesPieces) {
  IntervalUnion u;
  for (TimeFs t = 0; t < 100; t += 10) u.Add(t, t + 5);  // [0,5) [10,15) ... [90,95)
  u.Add(6, 8);                                           // new piece in a gap
  u.Add(33, 72);                                         // bridges [30,35) .. [70,75)
  u.Add(0, 3);                                           // inside a piece
  EXPECT_EQ(u.pieces(), (std::vector<Interval>{
                            {0, 5}, {6, 8}, {10, 15}, {20, 25}, {30, 75}, {80, 85}, {90, 95}}));
}

TEST(IntervalUnion, FarOutOfOrderIntervalsWaitAndMerge) {
  IntervalUnion u;
  for (TimeFs t = 0; t < 1000; t += 10) u.Add(t, t + 5);  // 100 pieces
  u.Add(1, 7);       // 100 pieces back: goes to the side buffer
  u.Add(400, 2000);  // swallows 60 pieces
  std::vector<Interval> want = {{0, 7}};
  for (TimeFs t = 10; t < 400; t += 10) want.emplace_back(t, t + 5);
  want.emplace_back(400, 2000);
  EXPECT_EQ(u.pieces(), want);
}

TEST(IntervalUnion, EraseAndClipTheFront) {
  IntervalUnion u;
  u.Add(0, 10);
  u.Add(20, 30);
  u.Add(40, 50);
  ASSERT_EQ(u.pieces().size(), 3u);
  u.EraseFront(1);
  u.ClipFront(25);
  u.Add(28, 45);
  EXPECT_EQ(u.pieces(), (std::vector<Interval>{{25, 50}}));
}

TEST(IntervalUnion, RandomStreamsEqualSortAndMerge) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<Interval> stream = UnitLikeStream(seed, 5000, 1000);
    IntervalUnion u;
    std::vector<Interval> added;
    for (size_t i = 0; i < stream.size(); ++i) {
      u.Add(stream[i].first, stream[i].second);
      added.push_back(stream[i]);
      if (i % 997 == 0 || i + 1 == stream.size()) {
        ASSERT_EQ(u.pieces(), SortAndMerge(added)) << "seed " << seed << " at " << i;
      }
    }
  }
}

// The UnitStats of before: every fold sorted and merged the whole list.
class ReferenceUnitStats {
 public:
  void AddBusy(TimeFs start, TimeFs end, TimeFs now) {
    if (end <= start) return;
    max_duration_ = std::max(max_duration_, end - start);
    if (start < folded_until_) {
      ++late_;
      if (end <= folded_until_) return;
      start = folded_until_;
    }
    if (!intervals_.empty() && intervals_.back().second >= start &&
        intervals_.back().first <= start) {
      intervals_.back().second = std::max(intervals_.back().second, end);
      return;
    }
    intervals_.emplace_back(start, end);
    if (intervals_.size() > 2 * compacted_size_ + 4096) {
      const TimeFs margin = std::max(kFoldMargin, 4 * max_duration_);
      Compact(now > margin ? now - margin : 0);
    }
  }
  TimeFs BusyTotal() {
    Compact(0);
    TimeFs total = folded_total_;
    for (auto& [s, e] : intervals_) total += e - s;
    return total;
  }
  uint64_t late_records() const { return late_; }

 private:
  static constexpr TimeFs kFoldMargin = 1'000'000'000'000;
  void Compact(TimeFs fold_before) {
    intervals_ = SortAndMerge(intervals_);
    size_t folded = 0;
    while (folded < intervals_.size() && intervals_[folded].second <= fold_before) {
      folded_total_ += intervals_[folded].second - intervals_[folded].first;
      folded_until_ = intervals_[folded].second;
      ++folded;
    }
    intervals_.erase(intervals_.begin(), intervals_.begin() + static_cast<std::ptrdiff_t>(folded));
    if (folded) folded_until_ = std::max(folded_until_, fold_before);
    compacted_size_ = intervals_.size();
  }
  std::vector<Interval> intervals_;
  size_t compacted_size_ = 0;
  uint64_t late_ = 0;
  TimeFs folded_total_ = 0, folded_until_ = 0, max_duration_ = 0;
};

TEST(UnitStats, TotalsAndLateRecordsEqualTheSortEverythingAlgorithm) {
  // Instructions of about 0.1 ms: 60000 of them span seconds, so old work is folded
  // several times and some far-back records arrive after their time was folded.
  uint64_t late = 0;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const std::vector<Interval> stream = UnitLikeStream(seed, 60000, 100'000'000'000);
    UnitStats stats;
    ReferenceUnitStats ref;
    TimeFs now = 0;
    for (size_t i = 0; i < stream.size(); ++i) {
      now = std::max(now, stream[i].first);
      stats.AddBusy(stream[i].first, stream[i].second, now);
      ref.AddBusy(stream[i].first, stream[i].second, now);
      if (i % 25013 == 0) {  // a total mid-run also compacts: both must stay in step
        ASSERT_EQ(stats.BusyTotal(), ref.BusyTotal()) << "seed " << seed;
      }
    }
    EXPECT_EQ(stats.BusyTotal(), ref.BusyTotal()) << "seed " << seed;
    EXPECT_EQ(stats.late_records(), ref.late_records()) << "seed " << seed;
    EXPECT_EQ(stats.instructions(), stream.size());
    late += stats.late_records();
  }
  EXPECT_GT(late, 0u);  // the clipping path was exercised
}

TEST(UnitStats, OverlappingOutOfOrderIntervalsCountTheirUnion) {
  UnitStats stats;
  stats.AddBusy(100, 200, 0);
  stats.AddBusy(50, 120, 0);   // before and overlapping
  stats.AddBusy(300, 400, 0);  // gap
  stats.AddBusy(150, 350, 0);  // bridges the gap
  stats.AddBusy(10, 20, 0);
  stats.AddBusy(500, 500, 0);  // empty, still an instruction
  EXPECT_EQ(stats.BusyTotal(), 350u + 10u);
  EXPECT_EQ(stats.instructions(), 6u);
  EXPECT_EQ(stats.late_records(), 0u);
}

TEST(UnitStats, NowIsReadOnlyWhenOldWorkIsFolded) {
  UnitStats stats;
  int reads = 0;
  for (TimeFs i = 0; i < 4096; ++i)  // 4096 entries: no fold yet
    stats.AddBusy(i * 10, i * 10 + 5, [&] { return ++reads, TimeFs{0}; });
  EXPECT_EQ(reads, 0);
  stats.AddBusy(50'000, 50'005, [&] { return ++reads, TimeFs{0}; });
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(stats.BusyTotal(), 4097u * 5);
}

}  // namespace
}  // namespace tpusim::sim
