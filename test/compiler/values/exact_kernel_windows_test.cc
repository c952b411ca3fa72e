// Kernel windows with values: kernels issued beside the one still draining (the other flag
// bank, VMEM beside its range) compute what the reference evaluator computes.
#include <gtest/gtest.h>

#include <string>

#include "test/compiler/lowering/kernel_window_modules.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

TEST(ExactKernelWindows, IndependentKernelsInAlternatingWindowsAreExact) {
  // The program the value run simulates has kernels in both windows (else the match below
  // would say nothing about them).
  bool exact = false;
  std::string inexact;
  auto c = testing::CompileForValues(testing::kIndependentKernels, sim::LoadConfig("v3-8"), exact,
                                     inexact);
  ASSERT_TRUE(c);
  const std::string& p = c->lowered.programs.at(0);
  EXPECT_NE(p.find("    window 1, "), std::string::npos);
  EXPECT_NE(p.find("    window 0, "), std::string::npos);
  testing::ExpectMatch(testing::kIndependentKernels);
}

}  // namespace
}  // namespace tpusim
