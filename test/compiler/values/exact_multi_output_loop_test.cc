// A multi-output loop fusion with values: Adam's update of a weight matrix (its new weights,
// first and second moments in one stream, vpu_stream.h) simulated on v3-8 and compared with
// the evaluator.
#include <gtest/gtest.h>

#include "test/compiler/passes/adam_update_module.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

TEST(ExactMultiOutputLoop, AdamsWeightsAndMomentsInOneStreamMatchTheEvaluator) {
  auto compiled = CompileForBoard(testing::kAdamUpdate, "test.hlo",
                                  driver::TargetFor(sim::LoadConfig("v3-8"), /*infeed=*/false));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  int streams = 0;
  for (const lowering::LoweredOp& op : compiled.value()->lowered.ops)
    streams += op.kind == lowering::KernelKind::kVpu;
  EXPECT_EQ(streams, 1);  // the three results in one kernel
  testing::ExpectMatch(testing::kAdamUpdate, 1e-6);
}

}  // namespace
}  // namespace tpusim
