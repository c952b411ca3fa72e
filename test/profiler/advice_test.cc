#include <gtest/gtest.h>

#include <memory>

#include "profiler/op_profile.h"
#include "profiler/recommendations.h"
#include "profiler/report.h"
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

TEST(OpProfile, OpTimeIsTheUnionOfItsIntervalsInAnyArrivalOrder) {
  // DMA copies report at completion: long copies arrive after shorter work that started
  // later. Before, a copy that ended before the op's open span was added in full, though
  // an earlier span had counted the same time (5 + 40 + 48 us here).
  Recorder rec(Opts(1));
  rec.SetTags(0, {"", "conv.1", "fusion.2"});
  rec.OnBusy(Busy(0, Unit::kDma, 0, 10, 1));
  rec.OnBusy(Busy(0, Unit::kMxu0, 20, 30, 1));
  rec.OnBusy(Busy(0, Unit::kDma, 5, 25, 1));  // completion order: started before 20
  rec.OnBusy(Busy(0, Unit::kMxu0, 40, 45, 1));
  rec.OnBusy(Busy(0, Unit::kDma, 2, 38, 1));   // covers the gap 30..38
  rec.OnBusy(Busy(0, Unit::kVpu, 45, 50, 2));  // another op
  rec.Finish();
  auto ops = ComputeOpProfile(rec, TestPeaks());
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "conv.1");
  EXPECT_DOUBLE_EQ(ops[0].time_ms, 0.043);  // [0, 38) and [40, 45)
  EXPECT_DOUBLE_EQ(ops[1].time_ms, 0.005);
}

TEST(Report, CollectiveIdleGapsCountAsAllReduceNotHostOverhead) {
  // A ring waits for its peers between its copies and folds: [40, 50) and [80, 90) busy,
  // 30 us idle between them. Before, that idle went to host overhead (mnist-cnn showed
  // 1.50 ms of host overhead that was the gradient all-reduce's latency).
  Recorder rec(Opts(1));
  rec.SetTags(0, {"", "conv.1", "all-reduce.2", "fusion.3"});
  rec.OnStep(Step(0, 0, 0, 100));
  rec.OnBusy(Busy(0, Unit::kMxu0, 0, 40, 1));
  rec.OnBusy(Busy(0, Unit::kDma, 40, 50, 2));
  rec.OnBusy(Busy(0, Unit::kVpu, 80, 90, 2));
  rec.OnBusy(Busy(0, Unit::kVpu, 90, 95, 3));
  rec.Finish();
  RunContext ctx;
  ctx.collective_ops = {"all-reduce.2"};
  Report r = BuildReport(rec, TestPeaks(), ctx);
  const StepBreakdown& b = r.metrics.step_breakdown;
  EXPECT_NEAR(b.all_reduce_ms, 0.050, 1e-12);     // the span [40, 90)
  EXPECT_NEAR(b.compute_ms, 0.045, 1e-12);        // conv and fusion
  EXPECT_NEAR(b.host_overhead_ms, 0.005, 1e-12);  // [95, 100)
}

TEST(Recorder, ContiguousRecordsGiveTheSameAggregatesMergedOrNot) {
  // Without an event log the recorder merges a record that continues its core's previous
  // one; with one (a trace) it keeps every record. Both must aggregate alike.
  auto run = [](bool keep_events) {
    RecorderOptions o = Opts(2);
    o.keep_events = keep_events;
    auto rec = std::make_unique<Recorder>(o);
    rec->SetTags(0, {"", "dot.1", "add.2"});
    rec->SetTags(1, {"", "dot.1", "add.2"});
    for (int core : {0, 1}) {
      for (int i = 0; i < 4; ++i)  // back-to-back matmuls of one op
        rec->OnBusy(Busy(core, Unit::kMxu0, 10.0 * i, 10.0 * i + 10, 1, 0, 1e6, 64));
      rec->OnBusy(Busy(core, Unit::kDma, 3, 41, 1, 0, 0, 4096));
      rec->OnBusy(Busy(core, Unit::kVpu, 41, 50, 2, 0, 100, 0));
      rec->OnBusy(Busy(core, Unit::kVpu, 50, 55, 2, 0, 100, 0));
    }
    rec->OnStep(Step(0, 0, 0, 60));
    rec->OnStep(Step(1, 0, 0, 60));
    rec->Finish();
    return rec;
  };
  auto merged = run(false), every = run(true);
  EXPECT_EQ(every->events().busy.size(), 14u);
  for (int c : {0, 1}) {
    for (int u = 0; u < isa::kNumUnits; ++u) {
      EXPECT_EQ(merged->core(c).units[u].busy, every->core(c).units[u].busy);
      EXPECT_EQ(merged->core(c).units[u].count, every->core(c).units[u].count);
    }
    EXPECT_EQ(merged->core(c).busy_union, every->core(c).busy_union);
    EXPECT_EQ(merged->core(c).busy_union, 55 * kUs);
  }
  ASSERT_EQ(merged->tags().size(), every->tags().size());
  for (size_t i = 0; i < merged->tags().size(); ++i) {
    EXPECT_EQ(merged->tags()[i].time, every->tags()[i].time) << merged->tags()[i].name;
    EXPECT_EQ(merged->tags()[i].count, every->tags()[i].count);
    EXPECT_EQ(merged->tags()[i].flops, every->tags()[i].flops);
    EXPECT_EQ(merged->tags()[i].bytes, every->tags()[i].bytes);
  }
  EXPECT_EQ(merged->core(0).units[static_cast<int>(Unit::kMxu0)].count, 4u);
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
  EXPECT_FALSE(Has(Recommend(WithBreakdown(100, 10, 0), ctx, TestPeaks(), {}), "input_bound"));
  auto r = Recommend(WithBreakdown(100, 10.5, 0), ctx, TestPeaks(), {});
  ASSERT_TRUE(Has(r, "input_bound"));
  EXPECT_DOUBLE_EQ(r[0].figure, 10.5);
  EXPECT_NE(r[0].text.find("10.5%"), std::string::npos);
}

TEST(Recommendations, AllReduceBoundAboveTenPercentOfTheStep) {
  RunContext ctx;
  Metrics m = WithBreakdown(10, 0, 0);
  m.step_breakdown.all_reduce_ms = 1.0, m.step_breakdown.compute_ms = 9.0;
  EXPECT_FALSE(Has(Recommend(m, ctx, TestPeaks(), {}), "all_reduce_bound"));
  m.step_breakdown.all_reduce_ms = 2.4, m.step_breakdown.compute_ms = 7.6;
  auto r = Recommend(m, ctx, TestPeaks(), {});
  ASSERT_TRUE(Has(r, "all_reduce_bound"));
  EXPECT_DOUBLE_EQ(r[0].step_share_percent, 24.0);
  EXPECT_NE(r[0].text.find("24.0% of the step time (2.4 ms)"), std::string::npos) << r[0].text;
  EXPECT_NE(r[0].text.find("it moves the gradients"), std::string::npos);
  ctx.partitioned = true;  // FSDP or a model axis: not only gradients
  auto p = Recommend(m, ctx, TestPeaks(), {});
  ASSERT_TRUE(Has(p, "all_reduce_bound"));
  EXPECT_NE(p[0].text.find("The collectives take 24.0% of the step time (2.4 ms). A partitioned "
                           "program gathers the weights it splits"),
            std::string::npos)
      << p[0].text;
}

OpProfileEntry OpTime(const std::string& name, double ms) {
  OpProfileEntry e;
  e.name = name;
  e.time_ms = ms;
  return e;
}

// A token model's layers see each example's positions as MXU rows: 2 sequences of 512 tokens
// per core fill the MXU, 1 of 64 does not (and the advice counts rows, not examples).
TEST(Recommendations, ATokenModelsRowsArePositions) {
  RunContext ctx;
  ctx.batch_per_core = 2;
  ctx.rows_per_example = 512;
  auto none = Recommend(WithBreakdown(100, 0, 0), ctx, TestPeaks(), {});
  for (const Recommendation& r : none) EXPECT_NE(r.id, "small_batch");
  ctx.batch_per_core = 1;
  ctx.rows_per_example = 64;
  auto r = Recommend(WithBreakdown(100, 0, 0), ctx, TestPeaks(), {});
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0].id, "small_batch");
  EXPECT_DOUBLE_EQ(r[0].figure, 50.0);
  EXPECT_NE(r[0].text.find("The batch per core is 1 (x 64 positions: 64 MXU rows per layer), "
                           "below 128 rows per core"),
            std::string::npos)
      << r[0].text;
  EXPECT_NE(r[0].text.find("Raise the global batch to 2 x the number of cores"), std::string::npos);
}

TEST(Recommendations, RankedByTheShareOfStepTimeAtStake) {
  RunContext ctx;
  ctx.batch_per_core = 32;  // 75% of the MXU rows unused, over 80% compute: 60%
  // dot.7: 40% waste of 10 ms of a 100 ms step (4%); add.1: under the waste threshold;
  // param.0: no op time (a parameter's layout), nothing to save in the step.
  ctx.padding = {{"dot.7", 100, 60, 10, 10}, {"add.1", 100, 95, 10, 10}, {"param.0", 0, 0, 20, 10}};
  ctx.steps_per_execution = 1;
  ctx.hbm_peak_bytes_per_core = 15ull << 30;
  const std::vector<OpProfileEntry> ops = {OpTime("dot.7", 10), OpTime("add.1", 30)};
  auto r = Recommend(WithBreakdown(100, 0, 20), ctx, TestPeaks(), ops);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].id, "small_batch");
  EXPECT_DOUBLE_EQ(r[0].figure, 75.0);
  EXPECT_DOUBLE_EQ(r[0].step_share_percent, 60.0);
  EXPECT_EQ(r[1].id, "host_overhead");
  EXPECT_DOUBLE_EQ(r[1].step_share_percent, 20.0);
  EXPECT_NE(r[1].text.find("steps_per_execution is 1"), std::string::npos);
  EXPECT_EQ(r[2].id, "padding_waste");
  EXPECT_DOUBLE_EQ(r[2].figure, 40.0);
  EXPECT_DOUBLE_EQ(r[2].step_share_percent, 4.0);
  EXPECT_NE(r[2].text.find("Op dot.7 wastes 40.0% of its work on padding (about 4.0% of the step"),
            std::string::npos);
  // Not input-bound (infeed 0%): XProf's advice, with the op time by kind.
  EXPECT_EQ(r[3].id, "not_input_bound");
  EXPECT_NE(r[3].text.find("NOT input-bound: only 0.0% of the step time waits for infeed"),
            std::string::npos);
  EXPECT_NE(r[3].text.find("By op kind: add 75.0%, dot 25.0% of the op time"), std::string::npos);
  EXPECT_EQ(r[4].id, "hbm_near_limit");
  EXPECT_NEAR(r[4].figure, 93.75, 1e-12);
  EXPECT_DOUBLE_EQ(r[4].step_share_percent, 0.0);

  // Padding that costs under 1% of the step is not worth a recommendation.
  r = Recommend(WithBreakdown(100, 0, 20), ctx, TestPeaks(), {OpTime("dot.7", 2)});
  EXPECT_FALSE(Has(r, "padding_waste"));
  // Infeed 30% outranks host overhead 20%.
  r = Recommend(WithBreakdown(100, 30, 20), RunContext{}, TestPeaks(), {});
  ASSERT_GE(r.size(), 2u);
  EXPECT_EQ(r[0].id, "input_bound");
  EXPECT_EQ(r[1].id, "host_overhead");

  ctx.batch_per_core = 128;
  ctx.steps_per_execution = 50;
  ctx.padding.clear();
  ctx.hbm_peak_bytes_per_core = 2ull << 30;
  r = Recommend(WithBreakdown(100, 0, 20), ctx, TestPeaks(), {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].id, "hbm_headroom");
  EXPECT_DOUBLE_EQ(r[0].figure, 12.5);
}

}  // namespace
}  // namespace tpusim::profiler
