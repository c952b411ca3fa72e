// The op profile grouped by framework op (XProf's view by TensorFlow / JAX op): HLO ops of
// one framework op summed, shares of all op time, the unknown ones together.
#include <gtest/gtest.h>

#include "profiler/op_profile.h"

namespace tpusim::profiler {
namespace {

OpProfileEntry Op(const std::string& name, double ms, const std::string& framework_op,
                  const std::string& source) {
  OpProfileEntry e;
  e.name = name;
  e.time_ms = ms;
  e.flops = 10 * ms;
  e.bytes = 100 * ms;
  e.framework_op = framework_op;
  e.source = source;
  return e;
}

TEST(FrameworkOps, HloOpsOfOneFrameworkOpAreSummed) {
  const std::vector<FrameworkOpEntry> by = ByFrameworkOp({
      Op("convolution.1", 4, "jit(step)/Conv_0/conv_general_dilated", "train.py:20"),
      Op("fusion.3", 3, "jit(step)/add", "train.py:31"),
      Op("convolution.2", 2, "jit(step)/Conv_0/conv_general_dilated", "train.py:20"),
      Op("copy.7", 1, "", ""),
  });
  ASSERT_EQ(by.size(), 3u);
  EXPECT_EQ(by[0].framework_op, "jit(step)/Conv_0/conv_general_dilated");
  EXPECT_EQ(by[0].source, "train.py:20");
  EXPECT_DOUBLE_EQ(by[0].time_ms, 6);
  EXPECT_DOUBLE_EQ(by[0].time_percent, 60);
  EXPECT_DOUBLE_EQ(by[0].flops, 60);
  EXPECT_DOUBLE_EQ(by[0].bytes, 600);
  EXPECT_EQ(by[0].hlo_ops, 2);
  EXPECT_EQ(by[1].framework_op, "jit(step)/add");
  EXPECT_DOUBLE_EQ(by[1].time_percent, 30);
  EXPECT_EQ(by[2].framework_op, "(no framework op)");
  EXPECT_EQ(by[2].hlo_ops, 1);
}

TEST(FrameworkOps, OriginsFillTheOpProfile) {
  TagAgg t;
  t.name = "dot.1";
  t.time = 2'000'000'000'000;  // 2 ms in fs
  HardwarePeaks peaks;
  const std::vector<OpProfileEntry> ops =
      ComputeOpProfile({t}, peaks, {{"dot.1", OpOrigin{"jit(f)/dot_general", "f.py:3"}}});
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].framework_op, "jit(f)/dot_general");
  EXPECT_EQ(ops[0].source, "f.py:3");
}

}  // namespace
}  // namespace tpusim::profiler
