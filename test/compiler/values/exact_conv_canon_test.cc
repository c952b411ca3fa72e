// Convolutions of ResNet-50's kinds that run exactly only after conv-canonicalization: each
// module is compiled for v3-8 (the pipeline rewrites it), simulated with random inputs and
// compared with the reference evaluator running the original module (sim_values_util.h).
#include <gtest/gtest.h>

#include "test/compiler/passes/conv_canon_cases.h"
#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ConvCase;

const ConvCase& Case(const std::string& name) {
  for (const ConvCase& c : testing::ConvCases())
    if (c.name == name) return c;
  throw std::out_of_range(name);
}

// One simulation per test (sim_values_util.h): one test per case.
#define EXACT_CONV_CANON_TEST(NAME) \
  TEST(ExactConvCanon, NAME) { testing::ExpectMatch(Case(#NAME).Module()); }

EXACT_CONV_CANON_TEST(WgradThreeByThreePadOne)
EXACT_CONV_CANON_TEST(WgradThreeByThreeStrideTwoSame)
EXACT_CONV_CANON_TEST(WgradThreeByThreeStrideTwoPadOne)
EXACT_CONV_CANON_TEST(WgradSevenBySevenStrideTwo)
EXACT_CONV_CANON_TEST(WgradOneByOneStrideTwo)
EXACT_CONV_CANON_TEST(DgradOneByOneStrideTwo)
EXACT_CONV_CANON_TEST(DgradThreeByThreeStrideTwoSame)
EXACT_CONV_CANON_TEST(DgradThreeByThreeStrideTwo01io)
EXACT_CONV_CANON_TEST(DgradThreeByThreeStrideTwoPadOne)
EXACT_CONV_CANON_TEST(DgradSevenBySevenStrideTwoPadThree)
EXACT_CONV_CANON_TEST(AtrousThreeByThreeDilationTwoSame)
EXACT_CONV_CANON_TEST(AtrousDilationsThreeAndTwoValid)
EXACT_CONV_CANON_TEST(AtrousDilationFour01oi)
EXACT_CONV_CANON_TEST(GroupedFourGroupsOfFour)
EXACT_CONV_CANON_TEST(DepthwiseMultiplierTwo)
EXACT_CONV_CANON_TEST(DepthwiseStrideTwo144Channels)
EXACT_CONV_CANON_TEST(DepthwiseWeightGradPadOne)
// JAX's bf16 weight gradients: the f32 kernel, then one rounding to bf16.
EXACT_CONV_CANON_TEST(WgradBf16ResultPadOne)
EXACT_CONV_CANON_TEST(WgradBf16ResultStrideTwoSame)
EXACT_CONV_CANON_TEST(DepthwiseWeightGradStrideTwo)
EXACT_CONV_CANON_TEST(GroupedInputGrad01oi)

}  // namespace
}  // namespace tpusim
