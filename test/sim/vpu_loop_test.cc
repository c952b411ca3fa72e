// The VPU's hardware loop: `vloop ra, n` runs the next n VPU instructions ra times, with
// strided loads and stores (vlds/vsts) walking VMEM trip by trip. Values are those of the
// body written out; a trip takes the cycles of its busiest VLIW slot class (loads and stores,
// or ALU work); bad loops stop the run with the loop's pc.
#include <gmock/gmock.h>

#include <algorithm>
#include <vector>

#include "kernel_test_util.h"
#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using ::testing::HasSubstr;
using testing::RandomBf16Values;
using testing::SingleCoreRun;

constexpr int kTrips = 24;
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr uint64_t kX = 0, kY = 0x20000, kOut = 0x40000;  // VMEM byte addresses

// out[k] = x[k] * y + 0.5 over 24 vregs; y is one vreg read every trip (stride 0), and the
// result is also stored as bf16 after the f32 outputs.
const char* kLoop = R"(
    li r1, 0
    li r2, 0x20000
    li r3, 0x40000
    li r4, 0x58000
    li r5, 24
    vmovi v24, 0.5
    vloop r5, 6
    vlds v0, r1, 4096
    vlds v1, r2, 0
    vmul v2, v0, v1
    vadd v3, v2, v24
    vsts v3, r3, 4096
    vsts.bf16 v3, r4, 2048
    vmovi v5, 1.0
    halt
)";

TEST(VpuLoop, ValuesEqualTheBodyRunOncePerTrip) {
  SingleCoreRun run(kLoop);
  auto x = RandomBf16Values(kTrips * 1024, 3), y = RandomBf16Values(1024, 4);
  run.core->vmem().Write(kX, x.data(), x.size() * 4);
  run.core->vmem().Write(kY, y.data(), y.size() * 4);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> out(kTrips * 1024);
  run.core->vmem().Read(kOut, out.data(), out.size() * 4);
  std::vector<uint16_t> out_bf16(kTrips * 1024);
  run.core->vmem().Read(0x58000, out_bf16.data(), out_bf16.size() * 2);
  for (int i = 0; i < kTrips * 1024; ++i) {
    const float want = x[i] * y[i % 1024] + 0.5f;
    ASSERT_EQ(out[i], want) << "element " << i;
    ASSERT_EQ(out_bf16[i], isa::F32ToBf16(want)) << "element " << i;
  }
  EXPECT_EQ(run.core->vpu().vreg(5)[0], 1.0f);  // the code after the body runs once
}

TEST(VpuLoop, TripsTakeTheCyclesOfTheBusiestSlotClass) {
  SingleCoreRun run(kLoop, /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // Four loads and stores share the load/store slots, two ALU ops the ALU slots.
  const int64_t body = std::max(CeilDiv(4 * c.vpu_load_store_cycles, c.vpu_load_store_slots),
                                CeilDiv(2 * c.vpu_alu_cycles, c.vpu_alu_slots));
  ASSERT_EQ(body, 2);  // v3: two of each slot per bundle
  int64_t vpu_busy = -1;
  for (const UnitReport& u : r.units)
    if (u.name == "vpu") vpu_busy = run.Cycles(u.busy_fs);
  // vmovi, the loop, vmovi back to back on the VPU after the five li (one cycle each); the
  // sequencer issues the loop as one instruction, so nothing else waits for it.
  EXPECT_EQ(vpu_busy, 2 * c.vpu_alu_cycles + kTrips * body);
  EXPECT_EQ(r.cycles, 5 + 2 * c.vpu_alu_cycles + kTrips * body);
}

// An ALU-heavy body: a transcendental and three ALU ops over two ALU slots, one load and one
// store over two load/store slots: the ALU slots set the pace.
TEST(VpuLoop, AnAluHeavyBodyIsPacedByTheAluSlots) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 0x20000
    li r5, 10
    vloop r5, 6
    vlds v0, r1, 4096
    vexp v1, v0
    vadd v2, v1, v0
    vmul v3, v2, v2
    vsub v4, v3, v0
    vsts v4, r2, 4096
    halt
  )",
                    /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  const int64_t alu = c.vpu_transcendental_cycles + 3 * c.vpu_alu_cycles;
  EXPECT_EQ(r.cycles, 3 + 10 * CeilDiv(alu, c.vpu_alu_slots));
  EXPECT_EQ(CeilDiv(alu, c.vpu_alu_slots), 4);  // v3: (4 + 3) / 2, rounded up
}

TEST(VpuLoop, ZeroTripsSkipTheBody) {
  SingleCoreRun run("li r1, 0\nvloop r1, 1\nvmovi v0, 3.0\nvmovi v1, 2.0\nhalt\n");
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(run.core->vpu().vreg(0)[0], 0.0f);
  EXPECT_EQ(run.core->vpu().vreg(1)[0], 2.0f);
}

TEST(VpuLoop, StridedStoreOutsideVmemNamesTheBodyInstruction) {
  SingleCoreRun run("li r1, 0\nli r2, 100000\nvloop r2, 1\nvsts v0, r1, 4096\nhalt\n",
                    /*functional=*/false);
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("pc 3 (vsts): VMEM address"));
  EXPECT_THAT(r.error, HasSubstr("is outside VMEM"));
}

TEST(VpuLoop, StrideOffTheAlignmentNamesTheSecondTrip) {
  SingleCoreRun run("li r1, 0\nli r2, 3\nvloop r2, 1\nvlds v0, r1, 100\nhalt\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("pc 3 (vlds): VMEM address 100 is not 256-byte aligned"));
}

TEST(VpuLoop, BodyWithAWaitIsRejected) {
  SingleCoreRun run("li r1, 4\nvloop r1, 2\nvmovi v0, 1.0\nwait vpu, f0, 1\nhalt\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("pc 3 (wait): cannot be in the body of the vloop at pc 1"));
}

TEST(VpuLoop, BodyPastTheEndOfTheProgramIsRejected) {
  SingleCoreRun run("li r1, 4\nvloop r1, 5\nvmovi v0, 1.0\nhalt\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error,
              HasSubstr("pc 1 (vloop): the vloop body of 5 instructions runs past the end"));
}

}  // namespace
}  // namespace tpusim::sim
