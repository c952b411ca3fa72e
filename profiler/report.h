// Everything the trace, summary and HTML writers need from one finished run.
#pragma once

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

// Call after Recorder::Finish().
inline Report BuildReport(const Recorder& rec, const HardwarePeaks& peaks, RunContext context) {
  Report r;
  r.peaks = peaks;
  r.context = std::move(context);
  r.metrics = ComputeMetrics(rec, peaks);
  r.ops = ComputeOpProfile(rec, peaks);
  r.recommendations = Recommend(r.metrics, r.context, peaks);
  return r;
}

}  // namespace tpusim::profiler
