// Everything the trace, summary and HTML writers need from one finished run.
#pragma once

#include <algorithm>
#include <vector>

#include "profiler/metrics.h"
#include "profiler/op_profile.h"
#include "profiler/recommendations.h"
#include "profiler/recorder.h"

namespace tpusim::profiler {

struct Report {
  HardwarePeaks peaks;
  RunContext context;
  Metrics metrics;
  std::vector<OpProfileEntry> ops;
  std::vector<Recommendation> recommendations;
};

// Moves the time cores spend in collective ops (RunContext::collective_ops) from compute
// to the all-reduce part of the average step breakdown.
inline void AttributeCollectives(Report& r) {
  double ms = 0;
  for (const OpProfileEntry& op : r.ops)
    if (std::find(r.context.collective_ops.begin(), r.context.collective_ops.end(), op.name) !=
        r.context.collective_ops.end())
      ms += op.time_ms;
  const double cores = std::max<double>(1, static_cast<double>(r.metrics.per_core.size()));
  const double per_step = ms / cores / std::max(1, r.context.steps);
  StepBreakdown& b = r.metrics.step_breakdown;
  const double moved = std::min(per_step, b.compute_ms);
  b.compute_ms -= moved;
  b.all_reduce_ms += moved;
}

// Call after Recorder::Finish().
inline Report BuildReport(const Recorder& rec, const HardwarePeaks& peaks, RunContext context) {
  Report r;
  r.peaks = peaks;
  r.context = std::move(context);
  r.metrics = ComputeMetrics(rec, peaks);
  r.ops = ComputeOpProfile(rec, peaks);
  AttributeCollectives(r);
  r.recommendations = Recommend(r.metrics, r.context, peaks, r.ops);
  return r;
}

}  // namespace tpusim::profiler
