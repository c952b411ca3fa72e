// Per-HLO-op profile: time, FLOPs, bytes, arithmetic intensity, and where the op sits on
// the roofline (compute- or memory-bound, time lost against its roofline bound).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "profiler/metrics.h"
#include "profiler/recorder.h"

namespace tpusim::profiler {

struct OpProfileEntry {
  std::string name;
  double time_ms = 0;       // summed over cores
  double time_percent = 0;  // share of all op time
  // The op's FLOPs as XLA's cost analysis counts them (RunContext::model_flops), else
  // (no HLO behind the op: a hand-written kernel) what the units executed.
  double flops = 0;
  double executed_flops = 0;  // what the MXUs and the VPU executed, padding included
  double bytes = 0;
  double intensity = 0;        // FLOP per HBM byte (0 when no bytes)
  bool compute_bound = false;  // intensity at or above the ridge point
  double roofline_ms = 0;      // max(flops / peak FLOP/s, bytes / peak BW), per core
  double wasted_ms = 0;        // time_ms - roofline_ms, at least 0
  double flop_rate_utilization_relative_to_roofline_percent = 0;
  uint64_t count = 0;
  double span_ms = 0;                // TagAgg::span
  std::string framework_op, source;  // OpOrigin of the HLO op, "" when unknown
};

// Where an HLO op came from in the user's program (XProf's "framework op" and its source).
struct OpOrigin {
  std::string framework_op, source;
};

// Op time by framework op (XProf's op profile grouped by the TensorFlow / JAX op): the HLO
// ops of one framework op summed, sorted by time, descending; ops of no known origin under
// "(no framework op)".
struct FrameworkOpEntry {
  std::string framework_op, source;
  double time_ms = 0, time_percent = 0, flops = 0, bytes = 0;
  int hlo_ops = 0;
};
std::vector<FrameworkOpEntry> ByFrameworkOp(const std::vector<OpProfileEntry>& ops);

// Replaces each entry's FLOPs by `model_flops` (by op name, FLOPs of all cores per step)
// times `steps`, keeping what the units executed in executed_flops, and recomputes the
// roofline figures: the op profile then counts what XLA counts and shows padding as time
// lost against the roofline.
void UseModelFlops(std::vector<OpProfileEntry>& ops,
                   const std::map<std::string, double>& model_flops, int steps,
                   const HardwarePeaks& peaks);

// Sorted by time, descending; ties by name, ascending.
// `origins` (by HLO op name) fills each entry's framework op and source.
std::vector<OpProfileEntry> ComputeOpProfile(const std::vector<TagAgg>& tags,
                                             const HardwarePeaks& peaks,
                                             const std::map<std::string, OpOrigin>& origins = {});
inline std::vector<OpProfileEntry> ComputeOpProfile(
    const Recorder& rec, const HardwarePeaks& peaks,
    const std::map<std::string, OpOrigin>& origins = {}) {
  return ComputeOpProfile(rec.tags(), peaks, origins);
}

}  // namespace tpusim::profiler
