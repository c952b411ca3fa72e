#include "profiler/metrics.h"

#include <gtest/gtest.h>

#include "test/profiler/test_records.h"

namespace tpusim::profiler {
namespace {

using namespace testing;  // NOLINT
using isa::Unit;

TEST(Metrics, OneOfTwoMxusBusyHalfTheTimeIs25Percent) {
  Recorder rec(Opts(1));
  rec.OnStep(Step(0, 0, 0, 100));
  rec.OnBusy(Busy(0, Unit::kMxu0, 0, 50));
  rec.Finish();
  Metrics m = ComputeMetrics(rec, TestPeaks());
  EXPECT_DOUBLE_EQ(m.mxu_utilization_percent, 25.0);
  EXPECT_DOUBLE_EQ(m.per_core[0].mxu_percent[0], 50.0);
  EXPECT_DOUBLE_EQ(m.per_core[0].mxu_percent[1], 0.0);
  EXPECT_DOUBLE_EQ(m.device_idle_time_percent, 50.0);
  EXPECT_DOUBLE_EQ(m.device_duty_cycle_percent, 50.0);
  EXPECT_DOUBLE_EQ(m.elapsed_ms, 0.1);
}

TEST(Metrics, OverlappingUnitIntervalsGiveExactIdle) {
  Recorder rec(Opts(1));
  rec.OnStep(Step(0, 0, 0, 100));
  rec.OnBusy(Busy(0, Unit::kMxu0, 0, 40));
  rec.OnBusy(Busy(0, Unit::kVpu, 30, 60));
  rec.OnBusy(Busy(0, Unit::kDma, 70, 80));
  rec.OnBusy(Busy(0, Unit::kDma, 75, 90));  // DMA engines overlap each other
  rec.OnBusy(Busy(0, Unit::kScalar, 10, 20));
  rec.Finish();
  Metrics m = ComputeMetrics(rec, TestPeaks());
  EXPECT_DOUBLE_EQ(m.device_idle_time_percent, 20.0);  // union [0,60) + [70,90) = 80
  EXPECT_DOUBLE_EQ(m.per_core[0].busy_ms, 0.08);
}

TEST(Metrics, FoldingInSmallBatchesMatchesOneFold) {
  RecorderOptions o = Opts(1);
  o.fold_threshold = 4;
  Recorder small(o), big(Opts(1));
  for (Recorder* r : {&small, &big}) {
    r->OnStep(Step(0, 0, 0, 500));
    r->OnStep(Step(0, 1, 500, 1000));
    for (int i = 0; i < 100; ++i) {
      r->OnBusy(Busy(0, Unit::kMxu0, i * 10, i * 10 + 7, 0, i / 50));
      r->OnBusy(Busy(0, Unit::kVpu, i * 10 + 5, i * 10 + 8, 0, i / 50));
    }
    r->Finish();
  }
  EXPECT_EQ(small.core(0).busy_union, 800 * kUs);
  EXPECT_EQ(big.core(0).busy_union, 800 * kUs);
  EXPECT_EQ(small.core(0).steps.at(1).busy, 400 * kUs);
  EXPECT_EQ(small.late_records(), 0u);
}

TEST(Metrics, StepBreakdownSumsToStepTime) {
  Recorder rec(Opts(2));
  for (int c = 0; c < 2; ++c) {
    rec.OnStep(Step(c, 0, 0, 100));
    rec.OnHost(Host(c, HostKind::kInfeedWait, 0, 10, 0));
    rec.OnBusy(Busy(c, Unit::kMxu0, 10, 70));
    rec.OnHost(Host(c, HostKind::kAllReduce, 70, 85, 0));
    rec.OnHost(Host(c, HostKind::kOutfeed, 85, 90, 0));
  }
  rec.OnStep(Step(1, 1, 100, 220));  // core 1 straggles on step 1
  rec.OnStep(Step(0, 1, 100, 200));
  rec.OnHost(Host(0, HostKind::kInfeedWait, 100, 130, 1));
  rec.Finish();
  Metrics m = ComputeMetrics(rec, TestPeaks());
  const StepBreakdown& b = m.step_breakdown;
  EXPECT_EQ(m.num_steps, 2);
  EXPECT_DOUBLE_EQ(m.step_time_ms.avg, 0.11);
  EXPECT_DOUBLE_EQ(m.step_time_ms.min, 0.1);
  EXPECT_DOUBLE_EQ(m.step_time_ms.max, 0.12);
  EXPECT_NEAR(b.compute_ms + b.infeed_ms + b.all_reduce_ms + b.outfeed_ms + b.host_to_device_ms +
                  b.host_overhead_ms,
              b.step_ms, 1e-12);
  EXPECT_NEAR(b.compute_ms, 0.03, 1e-12);  // (60 + 0) / 2 steps
  EXPECT_NEAR(b.infeed_ms, (10 + (30 + 0) / 2.0) / 2 * 1e-3, 1e-12);
  EXPECT_NEAR(m.per_core[0].breakdown.all_reduce_ms, 0.0075, 1e-12);
  // Core 0: infeed 40 of 200 us of steps; core 1: 10 of 220.
  EXPECT_DOUBLE_EQ(m.infeed_percent.max, 20.0);
  EXPECT_NEAR(m.infeed_percent.min, 100.0 * 10 / 220, 1e-12);
}

TEST(Metrics, RooflineAndBandwidth) {
  Recorder rec(Opts(1));
  // 100 us; 5e7 FLOP and 5e6 bytes: intensity 10 = ridge, bound 1e12 FLOP/s.
  rec.OnBusy(Busy(0, Unit::kMxu0, 0, 100, 1, 0, 5e7, 5'000'000));
  rec.Finish();
  Metrics m = ComputeMetrics(rec, TestPeaks());
  EXPECT_NEAR(m.flop_rate_utilization_relative_to_roofline_percent, 50.0, 1e-9);
  EXPECT_NEAR(m.memory_bw_utilization_relative_to_hw_limit_percent, 50.0, 1e-9);
  // Memory-bound: intensity 1 -> bound 1e11 FLOP/s; achieved 5e10 -> 50%.
  EXPECT_NEAR(RooflinePercent(5e6, 5e6, 1e-4, TestPeaks()), 50.0, 1e-9);
}

TEST(Recorder, EventWindowAndCap) {
  RecorderOptions o = Opts(1);
  o.first_step = 1;
  o.last_step = 1;
  o.max_events = 3;
  Recorder rec(o);
  for (uint32_t s = 0; s < 3; ++s) {
    rec.OnStep(Step(0, s, s * 10.0, s * 10.0 + 10));
    rec.OnBusy(Busy(0, Unit::kVpu, s * 10.0, s * 10.0 + 5, 0, s));
  }
  EXPECT_FALSE(rec.events().truncated);
  EXPECT_EQ(rec.events().busy.size(), 1u);
  EXPECT_EQ(rec.events().steps.size(), 1u);
  for (int i = 0; i < 3; ++i) rec.OnBusy(Busy(0, Unit::kVpu, 15, 16, 0, 1));
  rec.Finish();
  EXPECT_TRUE(rec.events().truncated);
  EXPECT_EQ(rec.events().dropped, 2u);
  EXPECT_EQ(rec.core(0).units[static_cast<int>(Unit::kVpu)].count, 6u);  // aggregates go on
}

}  // namespace
}  // namespace tpusim::profiler
