// Per-core activity in fixed-width time buckets (MXU busy, busy union, infeed wait), used
// for counters over time and for the monitor's sampling windows. The bucket width doubles
// whenever the run outgrows max_buckets, so memory stays bounded.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/activity.h"

namespace tpusim::profiler {

enum class Series : uint8_t { kMxuBusy, kUnionBusy, kInfeed };
inline constexpr int kNumSeries = 3;

class Timeline {
 public:
  Timeline(int num_cores, sim::TimeFs width, size_t max_buckets);

  // Adds `scale` x the overlap of [start, end) with each bucket to series s of core.
  void Add(int core, Series s, sim::TimeFs start, sim::TimeFs end);

  sim::TimeFs width() const { return width_; }
  size_t num_buckets() const { return num_buckets_; }
  // Femtoseconds of series s in bucket b of core (for MXU busy: summed over MXUs).
  sim::TimeFs At(int core, Series s, size_t b) const;
  // Femtoseconds of series s of core within [start, end), prorating partial buckets.
  double Within(int core, Series s, sim::TimeFs start, sim::TimeFs end) const;

 private:
  void Grow(size_t bucket);
  size_t Index(int core, Series s) const {
    return static_cast<size_t>(core) * kNumSeries + static_cast<size_t>(s);
  }

  int num_cores_;
  sim::TimeFs width_;
  size_t max_buckets_;
  size_t num_buckets_ = 0;
  std::vector<std::vector<sim::TimeFs>> data_;  // [core * kNumSeries + series][bucket]
};

}  // namespace tpusim::profiler
