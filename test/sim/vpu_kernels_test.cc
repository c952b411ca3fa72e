// The shipped VPU kernels examples/kernels/elementwise.s and reduce_rows.s: every output
// element against a host reference, VPU busy time against the instruction count of the
// kernel's structure, and total time against the HBM transfer time.
#include <algorithm>
#include <cmath>

#include "kernel_test_util.h"
#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using namespace testing;

int64_t VpuBusyCycles(const SingleCoreRun& run, const RunReport& r) {
  for (const UnitReport& u : r.units)
    if (u.name == "vpu") return run.Cycles(u.busy_fs);
  ADD_FAILURE() << "no vpu unit in the report";
  return -1;
}

// Cycles HBM needs to move `bytes` at full bandwidth, with no latency.
double HbmCycles(const CoreConfig& c, uint64_t bytes) {
  return static_cast<double>(bytes) / c.hbm_bandwidth_bytes_per_s * c.clock_hz;
}

// ---- elementwise.s: y = max(x * z + 1, 0) * 0.5 over f32[256,1024]
constexpr int kEwRows = 256, kEwCols = 1024, kEwN = kEwRows * kEwCols;
constexpr uint64_t kEwX = 0x000000, kEwZ = 0x100000, kEwY = 0x400000;

TEST(VpuKernel, ElementwiseMatchesHostReferenceExactly) {
  SingleCoreRun run(ReadText("examples/kernels/elementwise.s"));
  // bf16-valued inputs make x * z exact in f32, so the reference does not depend on
  // whether the host compiler fuses the multiply and add.
  auto x = RandomBf16Values(kEwN, 11), z = RandomBf16Values(kEwN, 12);
  for (float& v : z) v *= 4.f;  // x * z in (-4, 4): about a third of y is clipped to 0
  run.core->hbm().Write(kEwX, x.data(), x.size() * 4);
  run.core->hbm().Write(kEwZ, z.data(), z.size() * 4);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> y(kEwN);
  run.core->hbm().Read(kEwY, y.data(), y.size() * 4);
  int clipped = 0;
  for (int i = 0; i < kEwN; ++i) {
    float ref = std::max(x[i] * z[i] + 1.0f, 0.0f) * 0.5f;
    clipped += ref == 0.0f;
    ASSERT_EQ(y[i], ref) << "y[" << i / kEwCols << "," << i % kEwCols << "] x=" << x[i]
                         << " z=" << z[i];
  }
  EXPECT_GT(clipped, kEwN / 10);
}

TEST(VpuKernel, ElementwiseVpuBusyIsItsInstructionCountAndHbmHidesTheVpu) {
  SingleCoreRun run(ReadText("examples/kernels/elementwise.s"), /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // 3 vmovi constants, then per vreg (256 of them) 2 vld + 1 vst and 4 ALU ops (vmul,
  // vadd, vmax, vmul). Time blocked in `wait vpu` is a stall, not busy time.
  const int64_t vregs = kEwN / 1024;
  const int64_t expect =
      3 * c.vpu_alu_cycles + vregs * (3 * c.vpu_load_store_cycles + 4 * c.vpu_alu_cycles);
  EXPECT_EQ(VpuBusyCycles(run, r), expect);
  // The kernel is HBM-bound: 3 MiB cross HBM (x, z in; y out). A serial schedule would
  // add the VPU time and a DMA latency per copy on top; with the loads of three chunks
  // in flight under the VPU work, only the first load and the last store stick out.
  const double hbm = HbmCycles(c, 3 * uint64_t(kEwN) * 4);
  EXPECT_LE(r.cycles, 1.3 * hbm) << "HBM alone needs " << hbm << " cycles";
  EXPECT_GE(r.cycles, hbm);
}

// ---- reduce_rows.s: s[r] = sum_c x[r, c] over f32[1024,128]
constexpr int kRrRows = 1024, kRrCols = 128;
constexpr uint64_t kRrX = 0x000000, kRrS = 0x100000;

TEST(VpuKernel, ReduceRowsMatchesHostReference) {
  SingleCoreRun run(ReadText("examples/kernels/reduce_rows.s"));
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(kRrRows * kRrCols);
  for (float& v : x) v = dist(rng);
  run.core->hbm().Write(kRrX, x.data(), x.size() * 4);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> s(kRrRows);
  run.core->hbm().Read(kRrS, s.data(), s.size() * 4);
  for (int row = 0; row < kRrRows; ++row) {
    double ref = 0, mag = 0;
    for (int col = 0; col < kRrCols; ++col) {
      ref += x[row * kRrCols + col];
      mag += std::fabs(x[row * kRrCols + col]);
    }
    ASSERT_NEAR(s[row], ref, 1e-4 * mag) << "s[" << row << "]";
  }
  // The word after the last sum is untouched: the output is compact f32[1024].
  float after = -1;
  run.core->hbm().Read(kRrS + 4 * kRrRows, &after, 4);
  EXPECT_EQ(after, 0.0f);
}

TEST(VpuKernel, ReduceRowsVpuBusyIsItsInstructionCountAndLoadsOverlapTheVpu) {
  SingleCoreRun run(ReadText("examples/kernels/reduce_rows.s"), /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // Per vreg (128 of them) vld, vredlane.sum, vst; waits are stalls, not busy time.
  const int64_t vregs = kRrRows * kRrCols / 1024;
  const int64_t vpu = vregs * (2 * c.vpu_load_store_cycles + c.vpu_cross_lane_cycles);
  EXPECT_EQ(VpuBusyCycles(run, r), vpu);
  // The cross-lane reduce makes this kernel VPU-bound (10 cycles per vreg against ~8.6
  // of HBM time per 4 KiB). The run is the VPU time plus what cannot overlap it: the
  // first chunk's load (latency + 64 KiB) before the VPU starts and the last gather
  // (latency + 2 KiB) after it ends. Serially it would also pay the whole 512 KiB of
  // HBM transfer; the bound below leaves 10% slack and stays under that.
  const double head = c.dma_latency_cycles + HbmCycles(c, 64 << 10);
  const double tail = c.dma_latency_cycles + HbmCycles(c, 2048);
  const double hbm = HbmCycles(c, (kRrRows * kRrCols + kRrRows) * 4);
  const double bound = 1.1 * (head + vpu + tail);
  EXPECT_LE(r.cycles, bound);
  EXPECT_LT(bound, head + vpu + tail + hbm);
  EXPECT_GE(r.cycles, std::max<double>(vpu, hbm));
}

}  // namespace
}  // namespace tpusim::sim
