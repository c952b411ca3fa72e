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
  std::vector<FrameworkOpEntry> framework_ops;  // ops grouped by framework op
  std::vector<Recommendation> recommendations;
};

// The all-reduce part of the average step breakdown is the time cores spend inside
// collective ops (RunContext::collective_ops): their busy time moves from compute, and
// the idle gaps within their spans (waiting for peers and ICI latency) from host overhead.
// Collectives on the collective stream overlap the kernels: their share is already the
// main stream's waits for them (HostKind::kAllReduce).
inline void AttributeCollectives(Report& r) {
  if (r.context.collective_stream) return;
  double busy = 0, span = 0;
  for (const OpProfileEntry& op : r.ops)
    if (std::find(r.context.collective_ops.begin(), r.context.collective_ops.end(), op.name) !=
        r.context.collective_ops.end())
      busy += op.time_ms, span += std::max(op.span_ms, op.time_ms);
  const double per = std::max<double>(1, static_cast<double>(r.metrics.per_core.size())) *
                     std::max(1, r.context.steps);
  StepBreakdown& b = r.metrics.step_breakdown;
  const double moved = std::min(busy / per, b.compute_ms);
  const double idle = std::clamp((span - busy) / per, 0.0, std::max(0.0, b.host_overhead_ms));
  b.compute_ms -= moved;
  b.host_overhead_ms -= idle;
  b.all_reduce_ms += moved + idle;
}

// An MXU op that executes more FLOPs than its model counts wastes the difference on padding:
// a padding entry for the padding-waste advice (merged with the compiler's byte padding).
inline void AddMxuPadding(Report& r) {
  for (const OpProfileEntry& op : r.ops) {
    if (op.executed_flops <= op.flops || op.flops <= 0 ||
        std::find(r.context.mxu_ops.begin(), r.context.mxu_ops.end(), op.name) ==
            r.context.mxu_ops.end())
      continue;
    auto it = std::find_if(r.context.padding.begin(), r.context.padding.end(),
                           [&](const PaddingInfo& p) { return p.op == op.name; });
    if (it == r.context.padding.end()) {
      r.context.padding.push_back({op.name});
      it = r.context.padding.end() - 1;
    }
    it->padded_flops = op.executed_flops;
    it->useful_flops = op.flops;
  }
}

// Call after Recorder::Finish().
inline Report BuildReport(const Recorder& rec, const HardwarePeaks& peaks, RunContext context) {
  Report r;
  r.peaks = peaks;
  r.context = std::move(context);
  r.metrics = ComputeMetrics(rec, peaks);
  r.ops = ComputeOpProfile(rec, peaks, r.context.op_origins);
  UseModelFlops(r.ops, r.context.model_flops, r.context.steps, peaks);
  AddMxuPadding(r);
  r.framework_ops = ByFrameworkOp(r.ops);
  AttributeCollectives(r);
  r.recommendations = Recommend(r.metrics, r.context, peaks, r.ops);
  return r;
}

}  // namespace tpusim::profiler
