// The VPU's rounding, f32 -> s32 conversion and 32-bit logic, order and compare instructions
// (isa/opcodes.def), element by element against their C++ definitions on edge values, and
// their cost: one ALU operation each.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using testing::SingleCoreRun;

constexpr uint64_t kA = 0, kB = 4096, kOut = 8192;  // VMEM byte addresses

// Runs `ops` (each "mnemonic" reading v0, and v1 when binary) on a and b; returns each
// result's 1024 elements as bits.
std::vector<std::vector<uint32_t>> RunEach(const std::vector<std::string>& ops,
                                           const std::vector<uint32_t>& a,
                                           const std::vector<uint32_t>& b, bool binary) {
  std::string program = "    li r1, 0\n    li r2, 4096\n    vld v0, r1\n    vld v1, r2\n";
  for (size_t k = 0; k < ops.size(); ++k)
    program += "    " + ops[k] + " v" + std::to_string(2 + k) + ", v0" + (binary ? ", v1" : "") +
               "\n    li r3, " + std::to_string(kOut + 4096 * k) + "\n    vst v" +
               std::to_string(2 + k) + ", r3\n";
  program += "    halt\n";
  SingleCoreRun run(program);
  run.core->vmem().Write(kA, a.data(), 4096);
  run.core->vmem().Write(kB, b.data(), 4096);
  RunReport r = run.Run();
  EXPECT_TRUE(r.ok) << r.error;
  std::vector<std::vector<uint32_t>> out(ops.size(), std::vector<uint32_t>(1024));
  for (size_t k = 0; k < ops.size(); ++k)
    run.core->vmem().Read(kOut + 4096 * k, out[k].data(), 4096);
  const CoreConfig& c = run.board.core;
  for (const UnitReport& u : r.units) {
    if (u.name != "vpu") continue;
    EXPECT_EQ(run.Cycles(u.busy_fs),
              static_cast<int64_t>(2 + ops.size()) * c.vpu_load_store_cycles +
                  static_cast<int64_t>(ops.size()) * c.vpu_alu_cycles);
  }
  return out;
}

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

// Signed zeros, ties, the largest non-integral f32s, denormals, s32 saturation edges, inf,
// NaN; then a spread of magnitudes.
std::vector<uint32_t> FloatEdges() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f,           -0.0f,   0.5f,          -0.5f,         1.5f,
                          2.5f,           -2.5f,   0.49999997f,   8388607.5f,    -8388607.5f,
                          1e-40f,         -1e-40f, 2147483520.0f, 2147483648.0f, -2147483648.0f,
                          -2147483904.0f, inf,     -inf,          std::nanf(""), -0.75f,
                          1e30f};
  for (int i = static_cast<int>(v.size()); i < 1024; ++i)
    v.push_back(std::ldexp(static_cast<float>(i * 37 % 1000) / 1000.0f - 0.5f, i % 34));
  std::vector<uint32_t> bits;
  for (float f : v) bits.push_back(Bits(f));
  return bits;
}

TEST(VpuRounding, FloorCeilTruncRoundEvenAndConvertToS32) {
  const std::vector<uint32_t> a = FloatEdges();
  const auto out =
      RunEach({"vfloor", "vceil", "vtrunc", "vround.even", "vcvt.s32.f32"}, a, a, false);
  for (int i = 0; i < 1024; ++i) {
    const float x = std::bit_cast<float>(a[i]);
    ASSERT_EQ(out[0][i], Bits(std::floor(x))) << "floor of " << x;
    ASSERT_EQ(out[1][i], Bits(std::ceil(x))) << "ceil of " << x;
    ASSERT_EQ(out[2][i], Bits(std::trunc(x))) << "trunc of " << x;
    ASSERT_EQ(out[3][i], Bits(std::nearbyint(x))) << "round-even of " << x;
    const int32_t want = std::isnan(x)         ? 0
                         : x >= 2147483648.0f  ? INT32_MAX
                         : x <= -2147483648.0f ? INT32_MIN
                                               : static_cast<int32_t>(x);
    ASSERT_EQ(static_cast<int32_t>(out[4][i]), want) << "s32 of " << x;
  }
  EXPECT_EQ(out[3][2], Bits(0.0f));                        // 0.5: the tie goes to even 0
  EXPECT_EQ(out[3][5], Bits(2.0f));                        // 2.5 -> 2
  EXPECT_EQ(out[3][3], Bits(-0.0f));                       // -0.5 -> -0
  EXPECT_EQ(out[0][1], Bits(-0.0f));                       // floor keeps -0
  EXPECT_EQ(out[1][19], Bits(-0.0f));                      // ceil(-0.75) = -0
  EXPECT_EQ(static_cast<int32_t>(out[4][13]), INT32_MAX);  // 2^31 saturates
  EXPECT_EQ(static_cast<int32_t>(out[4][15]), INT32_MIN);  // below -2^31
  EXPECT_EQ(static_cast<int32_t>(out[4][18]), 0);          // NaN
  EXPECT_EQ(static_cast<int32_t>(out[4][6]), -2);          // toward zero
}

std::vector<uint32_t> IntEdges(uint32_t salt) {
  std::vector<uint32_t> v = {0,           0xffffffffu,
                             1,           0x7fffffffu,
                             0x80000000u, 0x80000000u,
                             7,           0x7f800001u /* a NaN as f32 */,
                             0x80000000u, 0};
  for (int i = static_cast<int>(v.size()); i < 1024; ++i)
    v.push_back((static_cast<uint32_t>(i) * 2654435761u + salt) >> (i % 3 ? 0 : i % 31));
  return v;
}

TEST(VpuRounding, MaxAndMinPropagateNanLikeXla) {
  std::vector<uint32_t> a = FloatEdges(), b = FloatEdges();
  std::rotate(b.begin(), b.begin() + 5, b.end());  // every edge against other edges
  const auto out = RunEach({"vmax", "vmin"}, a, b, true);
  for (int i = 0; i < 1024; ++i) {
    const float x = std::bit_cast<float>(a[i]), y = std::bit_cast<float>(b[i]);
    if (std::isnan(x) || std::isnan(y)) {
      ASSERT_TRUE(std::isnan(std::bit_cast<float>(out[0][i]))) << i;
      ASSERT_TRUE(std::isnan(std::bit_cast<float>(out[1][i]))) << i;
      continue;
    }
    ASSERT_EQ(out[0][i], Bits(x > y ? x : y)) << i;  // the evaluator's definition
    ASSERT_EQ(out[1][i], Bits(x < y ? x : y)) << i;
  }
  const uint32_t nan_at = 18;  // FloatEdges()[18] is NaN: max(NaN, y) is NaN, not y
  ASSERT_TRUE(std::isnan(std::bit_cast<float>(a[nan_at])));
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(out[0][nan_at])));
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(out[0][nan_at - 5])));  // NaN as the 2nd operand
}

TEST(VpuRounding, LogicOrderAndComparesOnS32Patterns) {
  std::vector<uint32_t> a = IntEdges(0), b = IntEdges(99);
  b[0] = 0x80000000u;  // s32 0 against INT32_MIN (+0.0 against -0.0 as f32: equal there)
  b[1] = 1;            // -1 < 1 (an f32 compare of 0xffffffff, a NaN, says no)
  b[7] = 0x7f800001u;  // the same NaN pattern: equal as bits
  const auto out = RunEach({"vand.u32", "vor.u32", "vmax.s32", "vmin.s32", "vcmp.lt.s32",
                            "vcmp.le.s32", "vcmp.eq.s32", "vcmp.ne.s32"},
                           a, b, true);
  const uint32_t one = Bits(1.0f), zero = Bits(0.0f);
  for (int i = 0; i < 1024; ++i) {
    const int32_t x = static_cast<int32_t>(a[i]), y = static_cast<int32_t>(b[i]);
    ASSERT_EQ(out[0][i], a[i] & b[i]) << i;
    ASSERT_EQ(out[1][i], a[i] | b[i]) << i;
    ASSERT_EQ(static_cast<int32_t>(out[2][i]), std::max(x, y)) << i;
    ASSERT_EQ(static_cast<int32_t>(out[3][i]), std::min(x, y)) << i;
    ASSERT_EQ(out[4][i], x < y ? one : zero) << i;
    ASSERT_EQ(out[5][i], x <= y ? one : zero) << i;
    ASSERT_EQ(out[6][i], x == y ? one : zero) << i;
    ASSERT_EQ(out[7][i], x != y ? one : zero) << i;
  }
  EXPECT_EQ(out[6][0], zero);  // 0 != INT32_MIN, though +0.0 == -0.0
  EXPECT_EQ(out[6][7], one);   // equal NaN patterns are equal
  EXPECT_EQ(out[4][1], one);   // -1 < 1
  EXPECT_EQ(static_cast<int32_t>(out[3][1]), -1);
}

}  // namespace
}  // namespace tpusim::sim
