// Per-HLO-op profile: time, FLOPs, bytes, arithmetic intensity, and where the op sits on
// the roofline (compute- or memory-bound, time lost against its roofline bound).
#pragma once

#include <string>
#include <vector>

#include "profiler/metrics.h"
#include "profiler/recorder.h"

namespace tpusim::profiler {

struct OpProfileEntry {
  std::string name;
  double time_ms = 0;       // summed over cores
  double time_percent = 0;  // share of all op time
  double flops = 0;
  double bytes = 0;
  double intensity = 0;        // FLOP per HBM byte (0 when no bytes)
  bool compute_bound = false;  // intensity at or above the ridge point
  double roofline_ms = 0;      // max(flops / peak FLOP/s, bytes / peak BW), per core
  double wasted_ms = 0;        // time_ms - roofline_ms, at least 0
  double flop_rate_utilization_relative_to_roofline_percent = 0;
  uint64_t count = 0;
  double span_ms = 0;  // TagAgg::span
};

// Sorted by time, descending; ties by name, ascending.
std::vector<OpProfileEntry> ComputeOpProfile(const std::vector<TagAgg>& tags,
                                             const HardwarePeaks& peaks);
inline std::vector<OpProfileEntry> ComputeOpProfile(const Recorder& rec,
                                                    const HardwarePeaks& peaks) {
  return ComputeOpProfile(rec.tags(), peaks);
}

}  // namespace tpusim::profiler
