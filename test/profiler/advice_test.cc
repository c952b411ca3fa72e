#include <gtest/gtest.h>

#include "profiler/op_profile.h"
#include "profiler/recommendations.h"
#include "test/profiler/test_records.h"

namespace tpusim::profiler {
namespace {

using namespace testing;  // NOLINT
using isa::Unit;

TEST(OpProfile, SortedByTimeThenNameWithRooflineClass) {
  Recorder rec(Opts(1));
  rec.SetTags(0, {"", "fusion.b", "dot.1", "fusion.a"});
  rec.OnBusy(Busy(0, Unit::kMxu0, 0, 10, 2, 0, 1e7, 100'000));    // intensity 100: compute
  rec.OnBusy(Busy(0, Unit::kVpu, 5, 20, 2, 0, 0, 0));             // same op, union 20 us
  rec.OnBusy(Busy(0, Unit::kVpu, 20, 30, 1, 0, 1e5, 1'000'000));  // intensity 0.1: memory
  rec.OnBusy(Busy(0, Unit::kVpu, 30, 40, 3, 0, 1e5, 1'000'000));
  rec.Finish();
  auto ops = ComputeOpProfile(rec, TestPeaks());
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].name, "dot.1");
  EXPECT_DOUBLE_EQ(ops[0].time_ms, 0.02);
  EXPECT_EQ(ops[0].count, 2u);
  EXPECT_TRUE(ops[0].compute_bound);
  EXPECT_DOUBLE_EQ(ops[0].intensity, 100.0);
  EXPECT_NEAR(ops[0].roofline_ms, 0.01, 1e-15);
  EXPECT_NEAR(ops[0].wasted_ms, 0.01, 1e-15);
  EXPECT_EQ(ops[1].name, "fusion.a");  // tie on time broken by name
  EXPECT_EQ(ops[2].name, "fusion.b");
  EXPECT_FALSE(ops[1].compute_bound);
  EXPECT_NEAR(ops[1].roofline_ms, 0.01, 1e-15);  // 1e6 bytes at 1e11 B/s
  EXPECT_DOUBLE_EQ(ops[1].time_percent, 25.0);
}

Metrics WithBreakdown(double step, double infeed, double host) {
  Metrics m;
  m.step_breakdown.step_ms = step;
  m.step_breakdown.infeed_ms = infeed;
  m.step_breakdown.host_overhead_ms = host;
  m.step_breakdown.compute_ms = step - infeed - host;
  return m;
}

bool Has(const std::vector<Recommendation>& r, const std::string& id) {
  for (const auto& x : r)
    if (x.id == id) return true;
  return false;
}

TEST(Recommendations, InputBoundAtThreshold) {
  RunContext ctx;
  EXPECT_FALSE(Has(Recommend(WithBreakdown(100, 10, 0), ctx, TestPeaks()), "input_bound"));
  auto r = Recommend(WithBreakdown(100, 10.5, 0), ctx, TestPeaks());
  ASSERT_TRUE(Has(r, "input_bound"));
  EXPECT_DOUBLE_EQ(r[0].figure, 10.5);
  EXPECT_NE(r[0].text.find("10.5%"), std::string::npos);
}

TEST(Recommendations, SmallBatchPaddingHostAndHbm) {
  RunContext ctx;
  ctx.batch_per_core = 32;
  ctx.padding = {{"dot.7", 100, 60, 10, 10}, {"add.1", 100, 95, 10, 10}};
  ctx.steps_per_execution = 1;
  ctx.hbm_peak_bytes_per_core = 15ull << 30;
  auto r = Recommend(WithBreakdown(100, 0, 20), ctx, TestPeaks());
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].id, "small_batch");
  EXPECT_DOUBLE_EQ(r[0].figure, 75.0);
  EXPECT_EQ(r[1].id, "padding_waste");
  EXPECT_DOUBLE_EQ(r[1].figure, 40.0);
  EXPECT_NE(r[1].text.find("dot.7"), std::string::npos);
  EXPECT_EQ(r[2].id, "host_overhead");
  EXPECT_NE(r[2].text.find("steps_per_execution is 1"), std::string::npos);
  EXPECT_EQ(r[3].id, "hbm_near_limit");
  EXPECT_NEAR(r[3].figure, 93.75, 1e-12);

  ctx.batch_per_core = 128;
  ctx.steps_per_execution = 50;
  ctx.padding.clear();
  ctx.hbm_peak_bytes_per_core = 2ull << 30;
  r = Recommend(WithBreakdown(100, 0, 20), ctx, TestPeaks());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].id, "hbm_headroom");
  EXPECT_DOUBLE_EQ(r[0].figure, 12.5);
}

}  // namespace
}  // namespace tpusim::profiler
