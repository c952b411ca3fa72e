// u32 divide and remainder, integer power, the u32 <-> float converts (vpu_uint_ops.cc) and
// the shifts (vshl.u32, vshrl.u32, vshra.s32), compiled for v3-8 and simulated on edge values and
// spread ones: every element equal to the evaluator's, integers exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test/compiler/values/elementwise_values_util.h"

namespace tpusim {
namespace {

using testing::ExpectBitExact;
using testing::RunWithArguments;
using testing::Unit;
using testing::Values;

constexpr double kU32Max = 4294967295.0, kTwo31 = 2147483648.0;

// u32 bit patterns of every magnitude: a random 32-bit value shifted right by i mod 32.
auto SpreadU32(uint32_t salt) {
  return [salt](int i) {
    const uint32_t bits = static_cast<uint32_t>(Unit(i, salt) * 4294967296.0);
    return static_cast<double>(bits >> (i % 32));
  };
}

// Divisors of 0, 1, 2^31 - 1, 2^31, 2^31 + 1 and 2^32 - 1 against dividends on both sides of
// them, then 65,516 random pairs: x / 0 = 2^32 - 1, x % 0 = x.
TEST(ExactIntegerOps, U32DivideAndRemainder) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kU32,
             {7,          7,        kU32Max,    kU32Max,     kU32Max, kU32Max, kTwo31,
              kTwo31 - 1, kTwo31,   kTwo31 + 1, kU32Max - 1, 0,       3e9,     3e9,
              1e9,        16777217, 4e9,        12345,       kU32Max, 2},
             SpreadU32(41), 512),
      Values(
          hlo::PrimitiveType::kU32,
          {2,       0, 1, kU32Max, kTwo31, kTwo31 - 1, kTwo31 + 1, kTwo31, kTwo31 - 1, kTwo31,
           kU32Max, 5, 3, 1.5e9,   3e9,    16777216,   2,          12345,  2,          kU32Max},
          [](int i) {
            const double d = SpreadU32(43)(i);
            return d == 0 ? 7 : d;
          },
          512)};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (a: u32[512,128], b: u32[512,128]) -> (u32[512,128], u32[512,128]) {
  %a = u32[512,128]{1,0} parameter(0)
  %b = u32[512,128]{1,0} parameter(1)
  %div = u32[512,128]{1,0} divide(%a, %b)
  %rem = u32[512,128]{1,0} remainder(%a, %b)
  ROOT %t = (u32[512,128], u32[512,128]) tuple(%div, %rem)
})",
                                  args),
                 args);
}

// Array exponents (negative ones: 1, +-1 or 0 by the base), a constant exponent and a
// constant base, on s32 and on u32 (32 exponent bits), wrapping.
TEST(ExactIntegerOps, PowerOfS32AndU32) {
  auto small = [](uint32_t salt) {
    return [salt](int i) { return std::floor(Unit(i, salt) * 41) - 20; };
  };
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kS32,
             {2, 2, -2, -2, 1, 1, -1, -1, -1, 0, 0, 3, 7, -3, 5, 2147483647, -2147483648.0, 2, 1},
             small(51)),
      Values(hlo::PrimitiveType::kS32,
             {30, 31, 31, 3, -5, 2147483647, -5, -6, -2147483648.0, 0, -1, 40, 11, 12, -1, 2, 2,
              65536, 2147483647},
             [](int i) { return std::floor(Unit(i, 53) * 80) - 16; }),
      Values(hlo::PrimitiveType::kU32, {3, 2, 0, kU32Max, kU32Max, 1, 0},
             [](int i) { return std::floor(Unit(i, 55) * 1000); }),
      Values(hlo::PrimitiveType::kU32, {kU32Max, 31, 0, 2, kTwo31 + 1, kU32Max, 5}, SpreadU32(57))};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (x: s32[8,128], y: s32[8,128], u: u32[8,128], v: u32[8,128]) -> (s32[8,128], s32[8,128], s32[8,128], u32[8,128]) {
  %x = s32[8,128]{1,0} parameter(0)
  %y = s32[8,128]{1,0} parameter(1)
  %u = u32[8,128]{1,0} parameter(2)
  %v = u32[8,128]{1,0} parameter(3)
  %pow = s32[8,128]{1,0} power(%x, %y)
  %seven = s32[] constant(7)
  %e7 = s32[8,128]{1,0} broadcast(%seven), dimensions={}
  %cube = s32[8,128]{1,0} power(%x, %e7)
  %three = s32[] constant(3)
  %b3 = s32[8,128]{1,0} broadcast(%three), dimensions={}
  %exp3 = s32[8,128]{1,0} power(%b3, %y)
  %upow = u32[8,128]{1,0} power(%u, %v)
  ROOT %t = (s32[8,128], s32[8,128], s32[8,128], u32[8,128]) tuple(%pow, %cube, %exp3, %upow)
})",
                                  args),
                 args);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// u32 -> f32 and bf16 (ties to even across 2^24 and 2^31, the largest values) and f32 -> u32
// (truncation, negatives and NaN to 0, saturation at 2^32 - 1), u32 -> pred (-> s32); an f32
// bitcast-convert to s32, u32 abs (itself) and sign (0 or 1).
TEST(ExactIntegerOps, U32ConvertsToAndFromFloat) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kU32,
             {0, 1, 16777217, 16777219, kTwo31 - 1, kTwo31, kTwo31 + 128, kTwo31 + 129,
              kTwo31 + 384, kU32Max, kU32Max - 127, kU32Max - 128, 3e9 + 1, 65537},
             SpreadU32(61)),
      Values(hlo::PrimitiveType::kF32,
             {0.0, -0.0, 0.5, 0.99, 1.5, -0.5, -1.0, -1e9, kTwo31 - 128, kTwo31, kTwo31 + 256,
              4294967040.0, 4294967296.0, 1e12, kInf, -kInf, kNaN, 3e9, 16777217.0},
             [](int i) { return (Unit(i, 63) - 0.1) * std::ldexp(1.0, i % 34); })};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (u: u32[8,128], x: f32[8,128]) -> (f32[8,128], bf16[8,128], u32[8,128], s32[8,128], s32[8,128], u32[8,128], u32[8,128]) {
  %u = u32[8,128]{1,0} parameter(0)
  %x = f32[8,128]{1,0} parameter(1)
  %f = f32[8,128]{1,0} convert(%u)
  %h = bf16[8,128]{1,0} convert(%u)
  %back = u32[8,128]{1,0} convert(%x)
  %p = pred[8,128]{1,0} convert(%u)
  %pi = s32[8,128]{1,0} convert(%p)
  %bits = s32[8,128]{1,0} bitcast-convert(%x)
  %abs = u32[8,128]{1,0} abs(%u)
  %sign = u32[8,128]{1,0} sign(%u)
  ROOT %t = (f32[8,128], bf16[8,128], u32[8,128], s32[8,128], s32[8,128], u32[8,128], u32[8,128]) tuple(%f, %h, %back, %pi, %bits, %abs, %sign)
})",
                                  args),
                 args);
}

// Shifts by per-element amounts (0, 31, 32 and beyond, negative s32 amounts read as
// unsigned: every bit shifted out, the sign filling an arithmetic shift), on u32 and s32.
TEST(ExactIntegerOps, ShiftsByAnyAmount) {
  auto amount = [](int i) { return std::floor(Unit(i, 71) * 40); };
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kU32, {kU32Max, kU32Max, kU32Max, kU32Max, 1, kTwo31, 12345},
             SpreadU32(67)),
      Values(hlo::PrimitiveType::kU32, {0, 31, 32, kU32Max, 31, 31, 33}, amount),
      Values(hlo::PrimitiveType::kS32, {-1, -2147483648.0, -5, 5, -5, 2147483647, -7},
             [](int i) { return static_cast<double>(static_cast<int32_t>(SpreadU32(73)(i))); }),
      Values(hlo::PrimitiveType::kS32, {31, 31, 32, 1, -1, 30, 40}, amount)};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
ENTRY %main (u: u32[8,128], n: u32[8,128], s: s32[8,128], m: s32[8,128]) -> (u32[8,128], u32[8,128], u32[8,128], s32[8,128], s32[8,128], s32[8,128]) {
  %u = u32[8,128]{1,0} parameter(0)
  %n = u32[8,128]{1,0} parameter(1)
  %s = s32[8,128]{1,0} parameter(2)
  %m = s32[8,128]{1,0} parameter(3)
  %ul = u32[8,128]{1,0} shift-left(%u, %n)
  %ur = u32[8,128]{1,0} shift-right-logical(%u, %n)
  %ua = u32[8,128]{1,0} shift-right-arithmetic(%u, %n)
  %sl = s32[8,128]{1,0} shift-left(%s, %m)
  %sr = s32[8,128]{1,0} shift-right-logical(%s, %m)
  %sa = s32[8,128]{1,0} shift-right-arithmetic(%s, %m)
  ROOT %t = (u32[8,128], u32[8,128], u32[8,128], s32[8,128], s32[8,128], s32[8,128]) tuple(%ul, %ur, %ua, %sl, %sr, %sa)
})",
                                  args),
                 args);
}

// What jax.random writes inside a jitted step: ThreeFry-2x32 rounds (add, rotate by constants
// as shift-left | shift-right-logical, xor) and uniform floats from the top 23 bits
// (shift-right-logical by 9, or with the bits of 1.0, bitcast-convert, minus 1).
TEST(ExactIntegerOps, ThreeFryRoundsAndUniformBits) {
  const std::vector<eval::Value> args = {
      Values(hlo::PrimitiveType::kU32, {0, 1, kU32Max, kTwo31}, SpreadU32(81)),
      Values(hlo::PrimitiveType::kU32, {0, kU32Max, 1, 12345}, SpreadU32(83))};
  ExpectBitExact(RunWithArguments(R"(HloModule m, replica_count=8
%round (x0: u32[8,128], x1: u32[8,128]) -> u32[8,128] {
  %x0 = u32[8,128]{1,0} parameter(0)
  %x1 = u32[8,128]{1,0} parameter(1)
  %a = u32[8,128]{1,0} add(%x0, %x1)
  %c13 = u32[] constant(13)
  %b13 = u32[8,128]{1,0} broadcast(%c13), dimensions={}
  %c19 = u32[] constant(19)
  %b19 = u32[8,128]{1,0} broadcast(%c19), dimensions={}
  %l = u32[8,128]{1,0} shift-left(%x1, %b13)
  %r = u32[8,128]{1,0} shift-right-logical(%x1, %b19)
  %rot = u32[8,128]{1,0} or(%l, %r)
  ROOT %x = u32[8,128]{1,0} xor(%rot, %a)
}
ENTRY %main (k: u32[8,128], c: u32[8,128]) -> (u32[8,128], f32[8,128]) {
  %k = u32[8,128]{1,0} parameter(0)
  %c = u32[8,128]{1,0} parameter(1)
  %bits = u32[8,128]{1,0} fusion(%k, %c), kind=kLoop, calls=%round
  %nine = u32[] constant(9)
  %b9 = u32[8,128]{1,0} broadcast(%nine), dimensions={}
  %m = u32[8,128]{1,0} shift-right-logical(%bits, %b9)
  %one = u32[] constant(1065353216)
  %b1 = u32[8,128]{1,0} broadcast(%one), dimensions={}
  %o = u32[8,128]{1,0} or(%m, %b1)
  %f = f32[8,128]{1,0} bitcast-convert(%o)
  %fone = f32[] constant(1)
  %bf = f32[8,128]{1,0} broadcast(%fone), dimensions={}
  %u = f32[8,128]{1,0} subtract(%f, %bf)
  ROOT %t = (u32[8,128], f32[8,128]) tuple(%bits, %u)
})",
                                  args),
                 args);
}

}  // namespace
}  // namespace tpusim
