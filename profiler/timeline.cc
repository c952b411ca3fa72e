#include "profiler/timeline.h"

#include <algorithm>

namespace tpusim::profiler {

Timeline::Timeline(int num_cores, sim::TimeFs width, size_t max_buckets)
    : num_cores_(num_cores),
      width_(std::max<sim::TimeFs>(width, 1)),
      max_buckets_(std::max<size_t>(max_buckets, 2)),
      data_(static_cast<size_t>(num_cores) * kNumSeries) {}

void Timeline::Grow(size_t bucket) {
  while (bucket >= max_buckets_) {  // coarsen: double the width, merge pairs
    for (auto& v : data_) {
      for (size_t i = 0; i < v.size(); ++i) v[i / 2] = (i % 2 ? v[i / 2] : 0) + v[i];
      v.resize((v.size() + 1) / 2);
    }
    num_buckets_ = (num_buckets_ + 1) / 2;
    width_ *= 2;
    bucket /= 2;
  }
  if (bucket >= num_buckets_) {
    num_buckets_ = bucket + 1;
    for (auto& v : data_) v.resize(num_buckets_, 0);
  }
}

void Timeline::Add(int core, Series s, sim::TimeFs start, sim::TimeFs end) {
  if (end <= start || core < 0 || core >= num_cores_) return;
  Grow((end - 1) / width_);
  std::vector<sim::TimeFs>& v = data_[Index(core, s)];
  for (size_t b = start / width_; b <= (end - 1) / width_; ++b) {
    const sim::TimeFs lo = std::max<sim::TimeFs>(start, b * width_);
    const sim::TimeFs hi = std::min<sim::TimeFs>(end, (b + 1) * width_);
    v[b] += hi - lo;
  }
}

sim::TimeFs Timeline::At(int core, Series s, size_t b) const {
  const auto& v = data_[Index(core, s)];
  return b < v.size() ? v[b] : 0;
}

double Timeline::Within(int core, Series s, sim::TimeFs start, sim::TimeFs end) const {
  double sum = 0;
  if (end <= start) return 0;
  const auto& v = data_[Index(core, s)];
  for (size_t b = start / width_; b < v.size() && b * width_ < end; ++b) {
    const sim::TimeFs lo = std::max<sim::TimeFs>(start, b * width_);
    const sim::TimeFs hi = std::min<sim::TimeFs>(end, (b + 1) * width_);
    sum += static_cast<double>(v[b]) * static_cast<double>(hi - lo) / static_cast<double>(width_);
  }
  return sum;
}

}  // namespace tpusim::profiler
