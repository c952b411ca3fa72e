#include "traces/summary.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "traces/atomic_file.h"

namespace tpusim::traces {
namespace {

using Json = nlohmann::ordered_json;

double R(double x) {
  const double r = std::round(x * 1000.0) / 1000.0;
  return r == 0 ? 0.0 : r;  // no "-0.0"
}

Json StatsJson(const profiler::Stats& s) {
  return Json{{"avg", R(s.avg)}, {"min", R(s.min)}, {"max", R(s.max)}};
}

Json BreakdownJson(const profiler::StepBreakdown& b) {
  return Json{{"step_ms", R(b.step_ms)},
              {"compute_ms", R(b.compute_ms)},
              {"infeed_ms", R(b.infeed_ms)},
              {"all_reduce_ms", R(b.all_reduce_ms)},
              {"outfeed_ms", R(b.outfeed_ms)},
              {"host_to_device_ms", R(b.host_to_device_ms)},
              {"host_overhead_ms", R(b.host_overhead_ms)}};
}

}  // namespace

std::string SummaryJson(const profiler::Report& report) {
  const profiler::Metrics& m = report.metrics;
  const profiler::RunContext& ctx = report.context;
  Json j;
  j["tpu_type"] = ctx.tpu_type;
  j["num_cores"] = m.per_core.size();
  j["elapsed_ms"] = R(m.elapsed_ms);
  j["num_steps"] = m.num_steps;
  j["mxu_utilization_percent"] = R(m.mxu_utilization_percent);
  j["device_idle_time_percent"] = R(m.device_idle_time_percent);
  j["device_duty_cycle_percent"] = R(m.device_duty_cycle_percent);
  j["flop_rate_utilization_relative_to_roofline_percent"] =
      R(m.flop_rate_utilization_relative_to_roofline_percent);
  j["memory_bw_utilization_relative_to_hw_limit_percent"] =
      R(m.memory_bw_utilization_relative_to_hw_limit_percent);
  j["step_time_ms"] = StatsJson(m.step_time_ms);
  j["infeed_percent"] = StatsJson(m.infeed_percent);
  j["step_breakdown_ms"] = BreakdownJson(m.step_breakdown);
  Json cores = Json::array();
  for (const profiler::CoreMetrics& c : m.per_core) {
    Json mxus = Json::array();
    for (double x : c.mxu_percent) mxus.push_back(R(x));
    cores.push_back(Json{{"core", c.core},
                         {"mxu_utilization_percent", R(c.mxu_utilization_percent)},
                         {"mxu_percent", mxus},
                         {"device_idle_time_percent", R(c.device_idle_time_percent)},
                         {"device_duty_cycle_percent", R(c.device_duty_cycle_percent)},
                         {"flop_rate_utilization_relative_to_roofline_percent",
                          R(c.flop_rate_utilization_relative_to_roofline_percent)},
                         {"memory_bw_utilization_relative_to_hw_limit_percent",
                          R(c.memory_bw_utilization_relative_to_hw_limit_percent)},
                         {"busy_ms", R(c.busy_ms)},
                         {"infeed_percent", R(c.infeed_percent)},
                         {"step_time_ms", StatsJson(c.step_time_ms)},
                         {"step_breakdown_ms", BreakdownJson(c.breakdown)}});
  }
  j["per_core"] = cores;
  j["hbm_peak_bytes_per_core"] =
      ctx.hbm_peak_bytes_per_core ? Json(*ctx.hbm_peak_bytes_per_core) : Json(nullptr);
  j["compilations"] = ctx.compilations ? Json(*ctx.compilations) : Json(nullptr);
  Json ops = Json::array();
  for (const profiler::OpProfileEntry& o : report.ops) {
    ops.push_back(Json{{"name", o.name},
                       {"time_ms", R(o.time_ms)},
                       {"time_percent", R(o.time_percent)},
                       {"flops", o.flops},
                       {"executed_flops", o.executed_flops},
                       {"bytes", o.bytes},
                       {"arithmetic_intensity", R(o.intensity)},
                       {"bound", o.compute_bound ? "compute" : "memory"},
                       {"roofline_ms", R(o.roofline_ms)},
                       {"wasted_ms", R(o.wasted_ms)},
                       {"count", o.count},
                       {"framework_op", o.framework_op},
                       {"source", o.source}});
  }
  j["op_profile"] = ops;
  Json by_framework = Json::array();
  for (const profiler::FrameworkOpEntry& f : report.framework_ops) {
    by_framework.push_back(Json{{"framework_op", f.framework_op},
                                {"source", f.source},
                                {"time_ms", R(f.time_ms)},
                                {"time_percent", R(f.time_percent)},
                                {"flops", f.flops},
                                {"bytes", f.bytes},
                                {"hlo_ops", f.hlo_ops}});
  }
  j["framework_op_profile"] = by_framework;
  Json recs = Json::array();
  for (const profiler::Recommendation& r : report.recommendations) {
    recs.push_back(Json{{"id", r.id},
                        {"figure", R(r.figure)},
                        {"unit", r.unit},
                        {"step_share_percent", R(r.step_share_percent)},
                        {"text", r.text}});
  }
  j["recommendations"] = recs;
  j["events_truncated"] = m.events_truncated;
  j["late_records"] = m.late_records;
  return j.dump(2) + "\n";
}

std::string WriteSummary(const profiler::Report& report, const std::string& path) {
  return WriteFileAtomic(path, SummaryJson(report));
}

}  // namespace tpusim::traces
