#include "profiler/op_profile.h"

#include <algorithm>

namespace tpusim::profiler {

std::vector<OpProfileEntry> ComputeOpProfile(const std::vector<TagAgg>& tags,
                                             const HardwarePeaks& peaks) {
  std::vector<OpProfileEntry> out;
  double total = 0;
  for (const TagAgg& t : tags) total += static_cast<double>(t.time);
  const double ridge = peaks.RidgePoint();
  for (const TagAgg& t : tags) {
    OpProfileEntry e;
    e.name = t.name;
    e.time_ms = static_cast<double>(t.time) / 1e12;
    e.span_ms = static_cast<double>(t.span) / 1e12;
    e.time_percent = Percent(static_cast<double>(t.time), total);
    e.flops = t.flops;
    e.bytes = static_cast<double>(t.bytes);
    e.count = t.count;
    e.intensity = e.bytes > 0 ? e.flops / e.bytes : 0;
    e.compute_bound = e.bytes == 0 ? e.flops > 0 : e.intensity >= ridge;
    double bound_s = 0;
    if (peaks.flops_per_s_per_core > 0) bound_s = e.flops / peaks.flops_per_s_per_core;
    if (peaks.hbm_bytes_per_s_per_core > 0) {
      bound_s = std::max(bound_s, e.bytes / peaks.hbm_bytes_per_s_per_core);
    }
    e.roofline_ms = bound_s * 1e3;
    e.wasted_ms = std::max(0.0, e.time_ms - e.roofline_ms);
    e.flop_rate_utilization_relative_to_roofline_percent =
        RooflinePercent(e.flops, e.bytes, e.time_ms / 1e3, peaks);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const OpProfileEntry& a, const OpProfileEntry& b) {
    if (a.time_ms != b.time_ms) return a.time_ms > b.time_ms;
    return a.name < b.name;
  });
  return out;
}

}  // namespace tpusim::profiler
