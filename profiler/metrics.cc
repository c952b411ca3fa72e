#include "profiler/metrics.h"

#include <algorithm>
#include <map>

namespace tpusim::profiler {
namespace {

constexpr double kFsPerMs = 1e12;
constexpr double kFsPerS = 1e15;

Stats StatsOf(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.avg = sum / static_cast<double>(v.size());
  return s;
}

// One core's step split into parts that sum to its duration exactly.
StepBreakdown SplitStep(const StepCoreAgg& st) {
  const double d = static_cast<double>(st.end - st.start);
  std::array<double, kNumHostKinds> h{};
  double waits = 0;
  for (int k = 0; k < kNumHostKinds; ++k) waits += h[k] = static_cast<double>(st.host[k]);
  if (waits > d && waits > 0) {  // reported waits exceed the step: scale them to fit
    for (double& x : h) x *= d / waits;
    waits = d;
  }
  auto at = [&](HostKind k) { return h[static_cast<int>(k)] / kFsPerMs; };
  StepBreakdown b;
  b.step_ms = d / kFsPerMs;
  b.compute_ms = std::min(static_cast<double>(st.busy), d - waits) / kFsPerMs;
  b.infeed_ms = at(HostKind::kInfeedWait);
  b.all_reduce_ms = at(HostKind::kAllReduce);
  b.outfeed_ms = at(HostKind::kOutfeed);
  b.host_to_device_ms = at(HostKind::kHostToDevice);
  b.host_overhead_ms =
      b.step_ms - b.compute_ms - b.infeed_ms - b.all_reduce_ms - b.outfeed_ms - b.host_to_device_ms;
  return b;
}

void Accumulate(StepBreakdown& acc, const StepBreakdown& b, double w) {
  acc.step_ms += w * b.step_ms;
  acc.compute_ms += w * b.compute_ms;
  acc.infeed_ms += w * b.infeed_ms;
  acc.all_reduce_ms += w * b.all_reduce_ms;
  acc.outfeed_ms += w * b.outfeed_ms;
  acc.host_to_device_ms += w * b.host_to_device_ms;
  acc.host_overhead_ms += w * b.host_overhead_ms;
}

struct BoardStep {
  TimeFs start = kNoTime, end = 0;
  StepBreakdown sum;  // summed over the cores that reported the step
  int cores = 0;
};

}  // namespace

double Percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

double RooflinePercent(double flops, double bytes, double seconds, const HardwarePeaks& peaks) {
  if (seconds <= 0 || peaks.flops_per_s_per_core <= 0) return 0;
  double bound = peaks.flops_per_s_per_core;
  if (bytes > 0 && peaks.hbm_bytes_per_s_per_core > 0) {
    bound = std::min(bound, flops / bytes * peaks.hbm_bytes_per_s_per_core);
  }
  return Percent(flops / seconds, bound);
}

Metrics ComputeMetrics(const Recorder& rec, const HardwarePeaks& peaks) {
  Metrics m;
  const double elapsed = static_cast<double>(rec.last_time() - rec.first_time());
  const double seconds = elapsed / kFsPerS;
  const int n = rec.num_cores();
  const int mxus = std::clamp(peaks.mxus_per_core, 1, isa::kMaxMxus);
  m.elapsed_ms = elapsed / kFsPerMs;
  std::map<uint32_t, BoardStep> board;
  double flops = 0, bytes = 0;
  std::vector<double> infeed;
  for (int c = 0; c < n; ++c) {
    const CoreAgg& agg = rec.core(c);
    CoreMetrics cm;
    cm.core = c;
    for (int i = 0; i < mxus; ++i) {
      const auto u = static_cast<int>(isa::Unit::kMxu0) + i;
      cm.mxu_percent.push_back(Percent(static_cast<double>(agg.units[u].busy), elapsed));
      cm.mxu_utilization_percent += cm.mxu_percent.back() / mxus;
    }
    cm.busy_ms = static_cast<double>(agg.busy_union) / kFsPerMs;
    cm.device_idle_time_percent = 100.0 - Percent(static_cast<double>(agg.busy_union), elapsed);
    cm.achieved_flops_per_s = seconds > 0 ? agg.flops / seconds : 0;
    cm.achieved_bytes_per_s = seconds > 0 ? static_cast<double>(agg.bytes) / seconds : 0;
    cm.flop_rate_utilization_relative_to_roofline_percent =
        RooflinePercent(agg.flops, static_cast<double>(agg.bytes), seconds, peaks);
    cm.memory_bw_utilization_relative_to_hw_limit_percent =
        Percent(cm.achieved_bytes_per_s, peaks.hbm_bytes_per_s_per_core);
    flops += agg.flops;
    bytes += static_cast<double>(agg.bytes);

    std::vector<double> times;
    double step_sum = 0, busy_in_steps = 0;
    for (const auto& [step, st] : agg.steps) {
      if (!st.reported()) continue;
      const StepBreakdown b = SplitStep(st);
      times.push_back(b.step_ms);
      step_sum += static_cast<double>(st.end - st.start);
      busy_in_steps += static_cast<double>(st.busy);
      Accumulate(cm.breakdown, b, 1.0);
      BoardStep& bs = board[step];
      bs.start = std::min(bs.start, st.start);
      bs.end = std::max(bs.end, st.end);
      Accumulate(bs.sum, b, 1.0);
      ++bs.cores;
    }
    if (!times.empty()) {
      StepBreakdown avg;
      Accumulate(avg, cm.breakdown, 1.0 / static_cast<double>(times.size()));
      cm.breakdown = avg;
    }
    cm.step_time_ms = StatsOf(times);
    cm.device_duty_cycle_percent = step_sum > 0
                                       ? Percent(busy_in_steps, step_sum)
                                       : Percent(static_cast<double>(agg.busy_union), elapsed);
    const double infeed_fs = static_cast<double>(agg.host[static_cast<int>(HostKind::kInfeedWait)]);
    cm.infeed_percent = Percent(infeed_fs, step_sum > 0 ? step_sum : elapsed);
    infeed.push_back(cm.infeed_percent);
    m.mxu_utilization_percent += cm.mxu_utilization_percent / n;
    m.device_idle_time_percent += cm.device_idle_time_percent / n;
    m.device_duty_cycle_percent += cm.device_duty_cycle_percent / n;
    m.per_core.push_back(std::move(cm));
  }
  m.flop_rate_utilization_relative_to_roofline_percent =
      RooflinePercent(flops, bytes, seconds * n, peaks);
  m.memory_bw_utilization_relative_to_hw_limit_percent =
      seconds > 0 ? Percent(bytes / (seconds * n), peaks.hbm_bytes_per_s_per_core) : 0;
  m.infeed_percent = StatsOf(infeed);

  // Board steps span the first start to the last end over the cores; the per-core parts
  // are averaged and any cross-core skew counts as other idle (host overhead).
  std::vector<double> times;
  for (const auto& [step, bs] : board) {
    StepBreakdown b;
    Accumulate(b, bs.sum, 1.0 / bs.cores);
    const double board_ms = static_cast<double>(bs.end - bs.start) / kFsPerMs;
    b.host_overhead_ms += board_ms - b.step_ms;
    b.step_ms = board_ms;
    times.push_back(board_ms);
    Accumulate(m.step_breakdown, b, 1.0 / static_cast<double>(board.size()));
  }
  m.num_steps = static_cast<int>(board.size());
  m.step_time_ms = StatsOf(times);
  m.events_truncated = rec.events().truncated;
  m.late_records = rec.late_records();
  return m;
}

}  // namespace tpusim::profiler
