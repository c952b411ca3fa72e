// The DMA path's bookkeeping structures against the simple ones they replaced, kept here
// as references: BandwidthChannel's vector calendar gives exactly the finishes of a
// plain std::map calendar, and CompletionTracker the minimum of a std::set of copies in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "sim/completion_tracker.h"
#include "sim/memory_port.h"

namespace tpusim::sim {
namespace {

// The calendar as a std::map (start -> end) of merged busy intervals, filling gaps in
// time order the plainest way: one gap per iteration, re-merging the whole map after.
class MapCalendar {
 public:
  explicit MapCalendar(double bytes_per_s) : fs_per_byte_(1e15 / bytes_per_s) {}
  uint64_t Reserve(uint64_t now_fs, uint64_t arrive_fs, uint64_t bytes) {
    while (!busy_.empty() && busy_.begin()->second <= now_fs) busy_.erase(busy_.begin());
    uint64_t left = static_cast<uint64_t>(static_cast<double>(bytes) * fs_per_byte_ + 0.5);
    uint64_t t = arrive_fs;
    for (;;) {
      for (const auto& [s, e] : busy_)
        if (s <= t && t < e) t = e;  // inside a busy interval: skip to its end
      if (left == 0) return t;
      auto next = busy_.upper_bound(t);
      const uint64_t take = next == busy_.end() ? left : std::min(left, next->first - t);
      busy_[t] = t + take;
      Merge();
      left -= take;
      t += take;
      if (left == 0) return t;
    }
  }

 private:
  void Merge() {
    std::map<uint64_t, uint64_t> merged;
    for (const auto& [s, e] : busy_) {
      if (!merged.empty() && std::prev(merged.end())->second >= s)
        std::prev(merged.end())->second = std::max(std::prev(merged.end())->second, e);
      else
        merged.emplace(s, e);
    }
    busy_.swap(merged);
  }
  double fs_per_byte_;
  std::map<uint64_t, uint64_t> busy_;
};

// Work-conserving: a transfer takes every free moment from its arrival on, split over
// gaps if need be, so the channel is never idle while a reserved transfer waits.
TEST(BandwidthChannel, FirstComeFirstServedAndGapsFilled) {
  BandwidthChannel ch(1e15);  // one byte per femtosecond
  EXPECT_EQ(ch.Reserve(0, 0, 10), 10u);
  EXPECT_EQ(ch.Reserve(0, 0, 10), 20u);    // queued behind the first
  EXPECT_EQ(ch.Reserve(0, 50, 10), 60u);   // leaves a gap [20, 50)
  EXPECT_EQ(ch.Reserve(0, 25, 20), 45u);   // fits in the gap
  EXPECT_EQ(ch.Reserve(0, 20, 10), 50u);   // [20, 25) and [45, 50): split over both gaps
  EXPECT_EQ(ch.Reserve(0, 0, 0), 60u);     // nothing to hold: the first free moment
  EXPECT_EQ(ch.Reserve(0, 30, 5), 65u);    // busy until 60
  EXPECT_EQ(ch.Reserve(100, 0, 10), 10u);  // past intervals are gone: arrival as given
  EXPECT_EQ(ch.bytes_served(), 75u);
}

// Many engines and cores: reservations arrive out of time order, some into the future,
// and the present advances unevenly. Every finish equals the map calendar's.
TEST(BandwidthChannel, EqualsMapCalendarOnRandomTraffic) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const double bandwidth = 1e11 + static_cast<double>(rng() % 1000) * 1e9;
    BandwidthChannel ch(bandwidth);
    MapCalendar ref(bandwidth);
    uint64_t now = 0;
    for (int i = 0; i < 3000; ++i) {
      if (rng() % 4 == 0) now += rng() % 2'000'000;
      const uint64_t arrive = now + (rng() % 3 == 0 ? 0 : rng() % 5'000'000);
      const uint64_t bytes = rng() % (rng() % 8 == 0 ? 65536 : 4096);
      ASSERT_EQ(ch.Reserve(now, arrive, bytes), ref.Reserve(now, arrive, bytes))
          << "seed " << seed << ", reservation " << i;
    }
  }
}

TEST(CompletionTracker, FirstUnfinishedEqualsMinimumOfSetInFlight) {
  std::mt19937_64 rng(7);
  CompletionTracker t;
  std::set<uint64_t> in_flight;
  uint64_t started = 0;
  for (int i = 0; i < 100000; ++i) {
    const size_t cap = i < 50000 ? 4 : 40;  // the window grows past the first ring size
    if (in_flight.size() < cap && (in_flight.empty() || rng() % 2 == 0)) {
      ASSERT_EQ(t.Start(), started);
      in_flight.insert(started++);
    } else {
      auto it = in_flight.begin();
      std::advance(it, static_cast<long>(rng() % in_flight.size()));
      t.Finish(*it);
      in_flight.erase(it);
    }
    ASSERT_EQ(t.started(), started);
    ASSERT_EQ(t.first_unfinished(), in_flight.empty() ? started : *in_flight.begin()) << i;
  }
}

}  // namespace
}  // namespace tpusim::sim
