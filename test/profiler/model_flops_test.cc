// The op profile counts FLOPs as XLA's cost analysis does (RunContext::model_flops); what
// the MXUs executed beyond that is padding, shown as time lost against the roofline and as
// padding-waste advice.
#include <gtest/gtest.h>

#include "profiler/op_profile.h"
#include "profiler/report.h"
#include "test/profiler/test_records.h"

namespace tpusim::profiler {
namespace {

using testing::TestPeaks;

// A convolution of 1 ms (summed over cores) whose MXUs executed 4e9 FLOPs.
TagAgg Conv() {
  TagAgg t;
  t.name = "convolution.1";
  t.time = 1'000'000'000'000;  // 1 ms in fs
  t.flops = 4e9;
  t.bytes = 1'000'000;
  return t;
}

TEST(ModelFlops, ReplaceTheExecutedCountAndMoveTheRoofline) {
  std::vector<OpProfileEntry> ops = ComputeOpProfile({Conv()}, TestPeaks());
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_DOUBLE_EQ(ops[0].flops, 4e9);
  EXPECT_DOUBLE_EQ(ops[0].roofline_ms, 4);  // 4e9 / 1e12 FLOP/s
  // The model counts 1e8 FLOPs per step; two steps ran.
  UseModelFlops(ops, {{"convolution.1", 1e8}}, 2, TestPeaks());
  EXPECT_DOUBLE_EQ(ops[0].flops, 2e8);
  EXPECT_DOUBLE_EQ(ops[0].executed_flops, 4e9);
  EXPECT_DOUBLE_EQ(ops[0].roofline_ms, 0.2);  // the model's work at peak
  EXPECT_DOUBLE_EQ(ops[0].wasted_ms, 0.8);    // the rest is lost against it
  EXPECT_DOUBLE_EQ(ops[0].intensity, 200);    // 2e8 FLOPs / 1e6 bytes
}

TEST(ModelFlops, OpsWithoutAModelCountKeepWhatTheUnitsExecuted) {
  std::vector<OpProfileEntry> ops = ComputeOpProfile({Conv()}, TestPeaks());
  UseModelFlops(ops, {{"other.2", 1}}, 1, TestPeaks());
  EXPECT_DOUBLE_EQ(ops[0].flops, 4e9);
  EXPECT_DOUBLE_EQ(ops[0].executed_flops, 4e9);
}

TEST(ModelFlops, MxuWorkBeyondTheModelIsPaddingWaste) {
  Report r;
  r.context.mxu_ops = {"convolution.1"};
  r.ops = ComputeOpProfile({Conv()}, TestPeaks());
  UseModelFlops(r.ops, {{"convolution.1", 1e9}}, 1, TestPeaks());
  AddMxuPadding(r);
  ASSERT_EQ(r.context.padding.size(), 1u);
  EXPECT_EQ(r.context.padding[0].op, "convolution.1");
  EXPECT_DOUBLE_EQ(r.context.padding[0].padded_flops, 4e9);
  EXPECT_DOUBLE_EQ(r.context.padding[0].useful_flops, 1e9);
  // A VPU op is not an MXU op: its executed count is not padding.
  Report v;
  v.ops = r.ops;
  AddMxuPadding(v);
  EXPECT_TRUE(v.context.padding.empty());
}

}  // namespace
}  // namespace tpusim::profiler
