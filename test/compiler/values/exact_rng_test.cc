// rng (RNG_UNIFORM and RNG_NORMAL f32) and rng-bit-generator on the VPU's counter-based generator
// (rng_kernel.h), compared with the evaluator's stream (compiler/eval/counter_rng.h) on v3-8.
#include <gtest/gtest.h>

#include <cstdio>

#include "test/compiler/values/sim_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectMatch;
using testing::SimulateValues;

// 300,000 uniforms in [-1.5, 2.25): two full 128-vreg chunks in the pair loop, then a
// partial one; and 1,001 more (a ragged vreg) from a second op with its own key.
constexpr const char* kUniform = R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8]) -> (f32[300,1000], f32[7,11,13]) {
  %x = f32[8]{0} parameter(0)
  %a = f32[] constant(-1.5)
  %b = f32[] constant(2.25)
  %u = f32[300,1000]{1,0} rng(%a, %b), distribution=RNG_UNIFORM
  %zero = f32[] constant(0)
  %one = f32[] constant(1)
  %v = f32[7,11,13]{2,1,0} rng(%zero, %one), distribution=RNG_UNIFORM
  ROOT %t = (f32[300,1000]{1,0}, f32[7,11,13]{2,1,0}) tuple(%u, %v)
})";

TEST(ExactRng, UniformF32EqualsTheEvaluatorsStream) { ExpectMatch(kUniform, 1e-12); }

TEST(ExactRng, CorruptedResultIsDetected) {
  testing::ValueRun r = SimulateValues(kUniform, /*corrupt=*/true);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_GT(r.error, 1.0);
}

// Bits keyed by a u64[2] state (folded on the sequencer) and by a u32[4] state, the first
// with its advanced state.
TEST(ExactRng, BitGeneratorBitsAndStateEqualTheEvaluators) {
  ExpectMatch(R"(HloModule m, replica_count=8
ENTRY %main (s: u64[2], t: u32[4]) -> (u32[300,7], u64[2], s32[5000]) {
  %s = u64[2]{0} parameter(0)
  %t = u32[4]{0} parameter(1)
  %g = (u64[2]{0}, u32[300,7]{1,0}) rng-bit-generator(%s), algorithm=rng_default
  %ns = u64[2]{0} get-tuple-element(%g), index=0
  %bits = u32[300,7]{1,0} get-tuple-element(%g), index=1
  %h = (u32[4]{0}, s32[5000]{0}) rng-bit-generator(%t), algorithm=rng_philox
  %more = s32[5000]{0} get-tuple-element(%h), index=1
  ROOT %r = (u32[300,7]{1,0}, u64[2]{0}, s32[5000]{0}) tuple(%bits, %ns, %more)
})",
              1e-12);
}

// RNG_NORMAL by Box-Muller on the VPU (vlog, vsqrt, the composed cosine): 300,000 draws of
// N(3, 2^2) and a ragged 1,001, within a few f32 ulps of the evaluator's (RngNormalF32; the
// cosine differs from cosf by at most 4 ulps, 2.4e-7 relative).
constexpr const char* kNormal = R"(HloModule m, replica_count=8
ENTRY %main (x: f32[8]) -> (f32[300,1000], f32[7,11,13]) {
  %x = f32[8]{0} parameter(0)
  %m = f32[] constant(3)
  %s = f32[] constant(2)
  %n = f32[300,1000]{1,0} rng(%m, %s), distribution=RNG_NORMAL
  %zero = f32[] constant(0)
  %one = f32[] constant(1)
  %v = f32[7,11,13]{2,1,0} rng(%zero, %one), distribution=RNG_NORMAL
  ROOT %t = (f32[300,1000]{1,0}, f32[7,11,13]{2,1,0}) tuple(%n, %v)
})";

TEST(ExactRng, NormalF32MatchesTheEvaluatorsBoxMuller) {
  testing::ValueRun r = SimulateValues(kNormal);
  ASSERT_TRUE(r.exact) << r.inexact_ops;
  EXPECT_TRUE(r.nonzero);
  EXPECT_GE(r.error, 0);
  EXPECT_LT(r.error, 1e-6);
  std::printf("max |simulated - evaluator| / max |evaluator|: %.3g\n", r.error);
}

}  // namespace
}  // namespace tpusim
