// XProf-style metrics computed from a finished Recorder (docs/profiler.md gives each
// definition). Hardware peaks come in as data, never as constants.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/recorder.h"

namespace tpusim::profiler {

struct HardwarePeaks {
  double flops_per_s_per_core = 0;      // peak bf16 FLOP/s of one core
  double hbm_bytes_per_s_per_core = 0;  // peak HBM bandwidth of one core
  double clock_hz = 0;
  int mxus_per_core = 2;
  uint64_t hbm_capacity_bytes_per_core = 0;
  // Roofline ridge point in FLOP per byte (0 when the peaks are unknown).
  double RidgePoint() const {
    return hbm_bytes_per_s_per_core > 0 ? flops_per_s_per_core / hbm_bytes_per_s_per_core : 0;
  }
};

struct Stats {
  double avg = 0, min = 0, max = 0;
};

// Average per step, in ms. The parts sum to step_ms exactly.
struct StepBreakdown {
  double step_ms = 0;
  double compute_ms = 0;
  double infeed_ms = 0;
  double all_reduce_ms = 0;
  double outfeed_ms = 0;
  double host_to_device_ms = 0;
  double host_overhead_ms = 0;  // explicit host overhead plus idle nothing else explains
};

struct CoreMetrics {
  int core = 0;
  double mxu_utilization_percent = 0;
  std::vector<double> mxu_percent;  // per MXU
  double device_idle_time_percent = 0;
  double device_duty_cycle_percent = 0;
  double flop_rate_utilization_relative_to_roofline_percent = 0;
  double memory_bw_utilization_relative_to_hw_limit_percent = 0;
  double achieved_flops_per_s = 0;
  double achieved_bytes_per_s = 0;
  double busy_ms = 0;
  double infeed_percent = 0;  // infeed wait / step time of this core
  Stats step_time_ms;
  StepBreakdown breakdown;
};

struct Metrics {
  double elapsed_ms = 0;  // first to last recorded activity on the board
  int num_steps = 0;
  double mxu_utilization_percent = 0;
  double device_idle_time_percent = 0;
  double device_duty_cycle_percent = 0;
  double flop_rate_utilization_relative_to_roofline_percent = 0;
  double memory_bw_utilization_relative_to_hw_limit_percent = 0;
  Stats step_time_ms;    // board step: first start to last end over the cores
  Stats infeed_percent;  // across cores
  StepBreakdown step_breakdown;
  std::vector<CoreMetrics> per_core;
  bool events_truncated = false;
  uint64_t late_records = 0;
};

// Percent of `part` in `whole`, 0 when whole is 0.
double Percent(double part, double whole);

// Achieved FLOP/s over the roofline bound min(intensity x peak BW, peak FLOP/s), in %.
double RooflinePercent(double flops, double bytes, double seconds, const HardwarePeaks& peaks);

// Call after Recorder::Finish().
Metrics ComputeMetrics(const Recorder& rec, const HardwarePeaks& peaks);

}  // namespace tpusim::profiler
