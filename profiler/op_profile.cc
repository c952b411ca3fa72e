#include "profiler/op_profile.h"

#include <algorithm>

namespace tpusim::profiler {
namespace {

// Intensity, bound, roofline time and waste of `e` from its FLOPs, bytes and time.
void Roofline(OpProfileEntry& e, const HardwarePeaks& peaks, double ridge) {
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
}

}  // namespace

void UseModelFlops(std::vector<OpProfileEntry>& ops,
                   const std::map<std::string, double>& model_flops, int steps,
                   const HardwarePeaks& peaks) {
  for (OpProfileEntry& e : ops) {
    const auto it = model_flops.find(e.name);
    if (it == model_flops.end()) continue;
    e.flops = it->second * std::max(1, steps);
    Roofline(e, peaks, peaks.RidgePoint());
  }
}

std::vector<OpProfileEntry> ComputeOpProfile(const std::vector<TagAgg>& tags,
                                             const HardwarePeaks& peaks,
                                             const std::map<std::string, OpOrigin>& origins) {
  std::vector<OpProfileEntry> out;
  double total = 0;
  for (const TagAgg& t : tags) total += static_cast<double>(t.time);
  const double ridge = peaks.RidgePoint();
  for (const TagAgg& t : tags) {
    OpProfileEntry e;
    e.name = t.name;
    if (const auto it = origins.find(t.name); it != origins.end()) {
      e.framework_op = it->second.framework_op;
      e.source = it->second.source;
    }
    e.time_ms = static_cast<double>(t.time) / 1e12;
    e.span_ms = static_cast<double>(t.span) / 1e12;
    e.time_percent = Percent(static_cast<double>(t.time), total);
    e.flops = e.executed_flops = t.flops;
    e.bytes = static_cast<double>(t.bytes);
    e.count = t.count;
    Roofline(e, peaks, ridge);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const OpProfileEntry& a, const OpProfileEntry& b) {
    if (a.time_ms != b.time_ms) return a.time_ms > b.time_ms;
    return a.name < b.name;
  });
  return out;
}

std::vector<FrameworkOpEntry> ByFrameworkOp(const std::vector<OpProfileEntry>& ops) {
  std::map<std::string, FrameworkOpEntry> by;
  double total = 0;
  for (const OpProfileEntry& o : ops) {
    const std::string key = o.framework_op.empty() ? "(no framework op)" : o.framework_op;
    FrameworkOpEntry& f = by[key];
    f.framework_op = key;
    if (f.source.empty()) f.source = o.source;
    f.time_ms += o.time_ms;
    f.flops += o.flops;
    f.bytes += o.bytes;
    ++f.hlo_ops;
    total += o.time_ms;
  }
  std::vector<FrameworkOpEntry> out;
  for (auto& [key, f] : by) {
    f.time_percent = total > 0 ? 100 * f.time_ms / total : 0;
    out.push_back(std::move(f));
  }
  std::stable_sort(
      out.begin(), out.end(),
      [](const FrameworkOpEntry& a, const FrameworkOpEntry& b) { return a.time_ms > b.time_ms; });
  return out;
}

}  // namespace tpusim::profiler
