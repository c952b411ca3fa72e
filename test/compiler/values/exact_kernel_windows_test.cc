// Kernel windows with values: kernels issued beside the one still draining (the other flag
// bank, VMEM beside its range) compute what the reference evaluator computes.
#include <gtest/gtest.h>

#include "test/compiler/lowering/kernel_window_modules.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

TEST(ExactKernelWindows, IndependentKernelsInAlternatingWindowsAreExact) {
  testing::ExpectMatch(testing::kIndependentKernels);
}

}  // namespace
}  // namespace tpusim
