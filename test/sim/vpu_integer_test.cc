// The VPU's integer instructions on s32 bit patterns: vadd.s32 and vsub.s32 wrap like two's
// complement, vcvt.f32.s32 rounds to nearest even; each costs one VPU ALU operation.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using testing::SingleCoreRun;

constexpr uint64_t kA = 0, kB = 4096, kOut = 8192;  // VMEM byte addresses

const char* kProgram = R"(
    li r1, 0
    li r2, 4096
    li r3, 8192
    li r4, 12288
    li r5, 16384
    vld v0, r1
    vld v1, r2
    vadd.s32 v2, v0, v1
    vsub.s32 v3, v0, v1
    vcvt.f32.s32 v4, v0
    vst v2, r3
    vst v3, r4
    vst v4, r5
    halt
)";

// Edge cases first (wrapping, rounding ties, negatives), then a spread of values.
std::vector<int32_t> Values(int salt) {
  std::vector<int32_t> v = {INT32_MAX, INT32_MIN, -1, 16777217, 16777219, -16777217, 0, 7};
  for (int i = static_cast<int>(v.size()); i < 1024; ++i)
    v.push_back(static_cast<int32_t>(static_cast<uint32_t>(i * 2654435761u + salt)));
  return v;
}

TEST(VpuInteger, AddSubWrapAndConvertRoundsToNearestEven) {
  SingleCoreRun run(kProgram);
  std::vector<int32_t> a = Values(0), b = Values(12345);
  b[0] = 1, b[1] = 1;  // INT32_MAX + 1 wraps to INT32_MIN; INT32_MIN - 1 to INT32_MAX
  run.core->vmem().Write(kA, a.data(), 4096);
  run.core->vmem().Write(kB, b.data(), 4096);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<int32_t> sum(1024), diff(1024);
  std::vector<float> conv(1024);
  run.core->vmem().Read(kOut, sum.data(), 4096);
  run.core->vmem().Read(kOut + 4096, diff.data(), 4096);
  run.core->vmem().Read(kOut + 8192, conv.data(), 4096);
  for (int i = 0; i < 1024; ++i) {
    const uint32_t ua = static_cast<uint32_t>(a[i]), ub = static_cast<uint32_t>(b[i]);
    ASSERT_EQ(sum[i], static_cast<int32_t>(ua + ub)) << "element " << i;
    ASSERT_EQ(diff[i], static_cast<int32_t>(ua - ub)) << "element " << i;
    ASSERT_EQ(conv[i], static_cast<float>(a[i])) << "element " << i;
  }
  EXPECT_EQ(sum[0], INT32_MIN);
  EXPECT_EQ(diff[1], INT32_MAX);
  EXPECT_EQ(conv[0], 2147483648.0f);
  EXPECT_EQ(conv[3], 16777216.0f);  // 2^24 + 1: the tie goes to the even neighbour
  EXPECT_EQ(conv[4], 16777220.0f);  // 2^24 + 3: up to the even one
  EXPECT_EQ(conv[5], -16777216.0f);
}

TEST(VpuInteger, EachInstructionCostsOneAluOperation) {
  SingleCoreRun run(kProgram, /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  int64_t vpu_busy = -1;
  for (const UnitReport& u : r.units)
    if (u.name == "vpu") vpu_busy = run.Cycles(u.busy_fs);
  EXPECT_EQ(vpu_busy, 5 * c.vpu_load_store_cycles + 3 * c.vpu_alu_cycles);
}

// The bitwise ops of counter-based random bits: xor, logical shift right (the immediate
// taken mod 32), and the low 32 bits of a product; one ALU operation each.
TEST(VpuInteger, XorShiftAndMultiplyOnBitPatterns) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 4096
    li r3, 8192
    vld v0, r1
    vld v1, r2
    vxor.u32 v2, v0, v1
    vshr.u32 v3, v0, 15
    vshr.u32 v4, v0, 33
    vmul.u32 v5, v0, v1
    li r4, 8192
    vst v2, r4
    li r4, 12288
    vst v3, r4
    li r4, 16384
    vst v4, r4
    li r4, 20480
    vst v5, r4
    halt
)");
  std::vector<int32_t> a = Values(3), b = Values(777);
  run.core->vmem().Write(kA, a.data(), 4096);
  run.core->vmem().Write(kB, b.data(), 4096);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<uint32_t> x(1024), shr(1024), shr1(1024), mul(1024);
  run.core->vmem().Read(kOut, x.data(), 4096);
  run.core->vmem().Read(kOut + 4096, shr.data(), 4096);
  run.core->vmem().Read(kOut + 8192, shr1.data(), 4096);
  run.core->vmem().Read(kOut + 12288, mul.data(), 4096);
  for (int i = 0; i < 1024; ++i) {
    const uint32_t ua = static_cast<uint32_t>(a[i]), ub = static_cast<uint32_t>(b[i]);
    ASSERT_EQ(x[i], ua ^ ub) << "element " << i;
    ASSERT_EQ(shr[i], ua >> 15) << "element " << i;
    ASSERT_EQ(shr1[i], ua >> 1) << "element " << i;
    ASSERT_EQ(mul[i], ua * ub) << "element " << i;
  }
  EXPECT_EQ(shr[1], 0x10000u);                          // INT32_MIN >> 15, logical: no sign bits
  EXPECT_EQ(mul[2], 0u - static_cast<uint32_t>(b[2]));  // -1 * b wraps
  const CoreConfig& c = run.board.core;
  int64_t vpu_busy = -1;
  for (const UnitReport& u : r.units)
    if (u.name == "vpu") vpu_busy = run.Cycles(u.busy_fs);
  EXPECT_EQ(vpu_busy, 6 * c.vpu_load_store_cycles + 4 * c.vpu_alu_cycles);
}

// Shifts by per-element amounts (XLA's shift ops): amounts of 32 or more, negative ones
// included (read as unsigned), shift every bit out; an arithmetic shift fills with the sign.
// One ALU operation each.
TEST(VpuInteger, ShiftsByPerElementAmounts) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 4096
    vld v0, r1
    vld v1, r2
    vshl.u32 v2, v0, v1
    vshrl.u32 v3, v0, v1
    vshra.s32 v4, v0, v1
    li r4, 8192
    vst v2, r4
    li r4, 12288
    vst v3, r4
    li r4, 16384
    vst v4, r4
    halt
)");
  std::vector<int32_t> a = Values(5), n(1024);
  const std::vector<int32_t> edges = {0, 1, 31, 32, 33, -1, INT32_MIN, 31};
  for (int i = 0; i < 1024; ++i) n[i] = i < 8 ? edges[i] : i % 40;
  run.core->vmem().Write(kA, a.data(), 4096);
  run.core->vmem().Write(kB, n.data(), 4096);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<uint32_t> shl(1024), shrl(1024), shra(1024);
  run.core->vmem().Read(kOut, shl.data(), 4096);
  run.core->vmem().Read(kOut + 4096, shrl.data(), 4096);
  run.core->vmem().Read(kOut + 8192, shra.data(), 4096);
  for (int i = 0; i < 1024; ++i) {
    const uint32_t ua = static_cast<uint32_t>(a[i]), k = static_cast<uint32_t>(n[i]);
    const uint32_t sign = a[i] < 0 ? ~0u : 0u;
    ASSERT_EQ(shl[i], k >= 32 ? 0u : ua << k) << "element " << i;
    ASSERT_EQ(shrl[i], k >= 32 ? 0u : ua >> k) << "element " << i;
    ASSERT_EQ(shra[i], k >= 32 ? sign : static_cast<uint32_t>(a[i] >> k)) << "element " << i;
  }
  EXPECT_EQ(shra[1], 0xc0000000u);  // INT32_MIN >> 1, arithmetic: the sign fills
  const CoreConfig& c = run.board.core;
  int64_t vpu_busy = -1;
  for (const UnitReport& u : r.units)
    if (u.name == "vpu") vpu_busy = run.Cycles(u.busy_fs);
  EXPECT_EQ(vpu_busy, 5 * c.vpu_load_store_cycles + 3 * c.vpu_alu_cycles);
}

}  // namespace
}  // namespace tpusim::sim
