// `tpusim run` on modules with while loops and calls: every kernel computes values and the
// results equal the reference evaluator's (compiler/lowering/control/control_flow.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "test/cli/cli_test_util.h"
#include "test/compiler/lowering/control_flow_modules.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Writes `hlo` to a file of the test's temporary directory and runs it.
Output RunModule(const std::string& name, const std::string& hlo) {
  const std::string path = ::testing::TempDir() + "tpusim_control_flow_" + name + ".hlo";
  std::ofstream(path) << hlo;
  return Tpusim("run " + path);
}

void ExpectMatch(const Output& o) {
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_THAT(o.text, Not(HasSubstr("timing-only")));
  EXPECT_THAT(o.text, HasSubstr("(match)"));
}

TEST(CliControlFlow, WhileLoopExampleMatchesTheEvaluator) {
  ExpectMatch(Tpusim("run examples/hlo/while_loop.hlo"));
}

TEST(CliControlFlow, DotLoopMatchesTheEvaluator) {
  ExpectMatch(RunModule("dot_loop", tpusim::testing::kDotLoop));
}

TEST(CliControlFlow, NestedLoopsMatchTheEvaluator) {
  ExpectMatch(RunModule("nested", tpusim::testing::kNestedLoops));
}

TEST(CliControlFlow, SwapLoopMatchesTheEvaluator) {
  ExpectMatch(RunModule("swap", tpusim::testing::kSwapLoop));
}

TEST(CliControlFlow, CallsMatchTheEvaluator) {
  ExpectMatch(RunModule("calls", tpusim::testing::kCalls));
}

TEST(CliControlFlow, LoopInsideACallMatchesTheEvaluator) {
  ExpectMatch(RunModule("loop_in_call", tpusim::testing::kLoopInCall));
}

}  // namespace
}  // namespace tpusim::cli
