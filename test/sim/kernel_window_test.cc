// isa `window`: the flag bank and VMEM offset the sequencer tags each issued instruction with,
// so that two kernels can be in flight on one core (docs/isa.md, docs/lowering.md).
#include <cstring>
#include <utility>
#include <vector>

#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using testing::SingleCoreRun;

// A copy in, a VPU load and store and a copy out, all in window (1, 64 KiB): every VMEM
// address they name lands 64 KiB up; HBM does not move.
TEST(KernelWindow, MovesTheVmemAddressesOfCopiesAndVpuAccessesButNotHbm) {
  SingleCoreRun run(R"(
    .desc vreg rows=1 row_bytes=4096 src_stride=0 dst_stride=0
    window 1, 65536
    li r1, 0
    li r2, 1048576
    dma.hv r1, r2, vreg, f2
    wait vpu, f2, 1
    vld v0, r1
    li r3, 4096
    vst v0, r3
    signal vpu, f3, 1
    wait dma, f3, 1
    li r4, 2097152
    dma.vh r4, r3, vreg, f4
    wait seq, f4, 1
    halt
  )");
  std::vector<float> data(1024);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) + 0.5f;
  run.core->hbm().Write(1048576, data.data(), 4096);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> moved(1024), home(1024, -1.0f), out(1024);
  run.core->vmem().Read(65536 + 4096, moved.data(), 4096);
  run.core->vmem().Read(4096, home.data(), 4096);
  run.core->hbm().Read(2097152, out.data(), 4096);
  EXPECT_EQ(std::memcmp(moved.data(), data.data(), 4096), 0);
  EXPECT_EQ(home[0], 0.0f);  // VMEM at the unmoved address was never written
  EXPECT_EQ(std::memcmp(out.data(), data.data(), 4096), 0);
}

// The MXU's weight load names VMEM 8 KiB, which window (0, 16 MiB - 8 KiB) moves to the
// end of VMEM.
TEST(KernelWindow, MovesTheMxusVmemAddresses) {
  SingleCoreRun run(R"(
    window 0, 16769024
    li r1, 8192
    mxu.ldw m0, r1
    halt
  )");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("VMEM range [16777216"), std::string::npos) << r.error;
}

// f3 set in bank 1 is not bank 0's f3: a wait on it in bank 0 never ends.
TEST(KernelWindow, BankOneHasItsOwnKernelFlags) {
  SingleCoreRun run(R"(
    window 1, 0
    sflag f3, 1
    window 0, 0
    wait seq, f3, 1
    halt
  )");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("deadlock"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("flag f3 >= 1"), std::string::npos) << r.error;
}

// f16 and up (the collectives' flags) are one per core: both banks see the same one. A copy
// issued in bank 1 completes on bank 1's f2, which a unit waits on in bank 1.
TEST(KernelWindow, CollectiveFlagsAreSharedAndCopiesCompleteInTheirBank) {
  SingleCoreRun run(R"(
    .desc vreg rows=1 row_bytes=4096 src_stride=0 dst_stride=0
    window 1, 0
    sflag f16, 1
    li r1, 0
    dma.hv r1, r1, vreg, f2
    wait vpu, f2, 1
    signal vpu, f30, 1
    wait seq, f30, 1
    window 0, 0
    wait seq, f16, 1
    halt
  )",
                    /*functional=*/false);
  RunReport r = run.Run();
  EXPECT_TRUE(r.ok) << r.error;
}

// Each case its own process (one SystemC simulation per process): the instruction and what
// its error names.
class KernelWindowOperands : public ::testing::TestWithParam<std::pair<const char*, const char*>> {
};

TEST_P(KernelWindowOperands, AreRejectedWithTheirReason) {
  const auto [bad, reason] = GetParam();
  SingleCoreRun run(std::string("    ") + bad + "\n    halt\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok) << bad;
  EXPECT_NE(r.error.find(reason), std::string::npos) << r.error;
}

INSTANTIATE_TEST_SUITE_P(
    KernelWindow, KernelWindowOperands,
    ::testing::Values(std::make_pair("window 2, 0", "names flag bank 2"),
                      std::make_pair("window 1, 100", "moves VMEM by 100 bytes"),
                      std::make_pair("window 0, 16777216", "moves VMEM by 16777216 bytes")));

}  // namespace
}  // namespace tpusim::sim
