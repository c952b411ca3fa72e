// Whole-core timing: each scenario's cycle count follows from the formulas of docs/isa.md.
#include "sim/timing.h"
#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using testing::SingleCoreRun;

TEST(CoreTiming, ScalarLoopCostsOneCyclePerInstructionPlusTakenBranchPenalty) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 10
  loop:
    addi r1, r1, 1
    blt r1, r2, loop
    halt
  )");
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  // 2 li + 10 x (addi + blt) + 9 taken branches x 2 penalty cycles.
  EXPECT_EQ(r.cycles, 2 + 10 * 2 + 9 * 2);
  EXPECT_EQ(run.core->sequencer().reg(1), 10);
}

TEST(CoreTiming, DmaTakesLatencyPlusBytesOverHbmBandwidth) {
  SingleCoreRun run(R"(
    .desc mb rows=1024 row_bytes=1024 src_stride=1024 dst_stride=1024
    li r1, 0
    li r2, 4096
    dma.hv r1, r2, mb, f0
    wait seq, f0, 1
    halt
  )");
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // Dispatched after the two li (2 cycles); the copy is HBM-bound (VMEM port is faster);
  // the wait costs sync_cycles once the flag is set.
  double expect_fs =
      CyclesToFs(c, 2 + c.sync_cycles) + DmaAloneFs(c, 1 << 20, c.hbm_bandwidth_bytes_per_s);
  EXPECT_NEAR(static_cast<double>(r.end_fs), expect_fs, 1e3);  // within a picosecond
}

TEST(CoreTiming, ConcurrentDmasShareHbmBandwidth) {
  SingleCoreRun run(R"(
    .desc mb rows=1 row_bytes=1048576 src_stride=0 dst_stride=0
    li r1, 0
    li r2, 1048576
    dma.hv r1, r2, mb, f0
    dma.hv r2, r1, mb, f0
    wait seq, f0, 2
    halt
  )");
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // Two engines, one HBM: the pair takes the bytes of both over one bandwidth.
  double expect_fs =
      CyclesToFs(c, 3 + c.sync_cycles) + DmaAloneFs(c, 2 << 20, c.hbm_bandwidth_bytes_per_s);
  EXPECT_NEAR(static_cast<double>(r.end_fs), expect_fs, 0.002 * expect_fs);
  for (const UnitReport& u : r.units) {
    if (u.name == "dma") {
      EXPECT_EQ(u.instructions, 2u);
    }
  }
}

TEST(CoreTiming, WithoutUnitBusyStatsInstructionsAreStillCounted) {
  // `tpusim run` leaves busy time to the profiler: the units keep no interval unions.
  const std::string text = R"(
    .desc mb rows=1 row_bytes=65536 src_stride=0 dst_stride=0
    li r1, 0
    li r2, 65536
    dma.hv r1, r2, mb, f0
    dma.hv r2, r1, mb, f0
    wait seq, f0, 2
    halt
  )";
  BoardConfig board = LoadConfig("v3-8");
  Simulation sim(board, RunOptions{.functional = false, .unit_busy = false});
  sim.AddCore(testing::MustAssemble(text));
  RunReport r = sim.Run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.end_fs, 0u);
  bool saw_dma = false;
  for (const UnitReport& u : r.units) {
    EXPECT_EQ(u.busy_fs, 0u) << u.name;
    if (u.name != "dma") continue;
    saw_dma = true;
    EXPECT_EQ(u.instructions, 2u);
  }
  EXPECT_TRUE(saw_dma);
}

TEST(CoreTiming, MatmulStreamsRowsAfterWeightsAndPopWaitsForDrain) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 512
    li r3, 0
    mxu.ldw m0, r1
    mxu.mm m0, r1, r2, r3
    mxu.pop m0, r1, r3, r2
    halt
  )");
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // ldw issues at cycle 3 (after 3 li) and takes 128; the matmul streams 512 rows; the pop
  // starts when the last result has drained (fill/drain 255) and takes 512 cycles.
  int64_t expect = 3 + c.mxu_weight_load_cycles + 512 + c.mxu_fill_drain_cycles() + 512;
  EXPECT_EQ(r.cycles, expect);
  for (const UnitReport& u : r.units) {
    if (u.name == "mxu0") {
      EXPECT_EQ(run.Cycles(u.busy_fs), 512);
    }
  }
}

TEST(CoreTiming, DoubleBufferedWeightLoadOverlapsTheRunningMatmul) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 1024
    li r3, 0
    mxu.ldw m0, r1
    mxu.mm m0, r1, r2, r3
    mxu.ldw m0, r1
    mxu.mma m0, r1, r2, r3
    halt
  )",
                    /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  // The second load hides under the first matmul: no bubble between the two streams.
  EXPECT_EQ(r.cycles, 3 + c.mxu_weight_load_cycles + 2 * 1024);
}

TEST(CoreTiming, VpuOpsCostTheirClassCycles) {
  SingleCoreRun run(R"(
    vmovi v0, 2.0
    vadd v1, v0, v0
    vexp v2, v1
    vredlane.sum v3, v2
    vxpose v16, v0
    halt
  )");
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  EXPECT_EQ(r.cycles, 2 * c.vpu_alu_cycles + c.vpu_transcendental_cycles + c.vpu_cross_lane_cycles +
                          c.vpu_transpose_cycles);
}

// A vloop trip issues over the VLIW bundle's vector slots: its busiest slot class sets the
// cycles (exact formula, with the slot counts of the configuration).
TEST(CoreTiming, VloopTripCyclesAreThoseOfTheBusiestSlotClass) {
  CoreConfig c;
  c.vpu_alu_slots = 2, c.vpu_load_store_slots = 2;
  EXPECT_EQ(VloopTripCycles(c, 2, 2), 1);
  EXPECT_EQ(VloopTripCycles(c, 3, 1), 2);   // loads and stores: ceil(3 / 2)
  EXPECT_EQ(VloopTripCycles(c, 2, 13), 7);  // ALU: ceil(13 / 2)
  EXPECT_EQ(VloopTripCycles(c, 0, 0), 0);
  c.vpu_alu_slots = 1, c.vpu_load_store_slots = 1;  // one slot each: the larger sum
  EXPECT_EQ(VloopTripCycles(c, 3, 5), 5);
}

TEST(CoreTiming, SignalFiresOnlyAfterTheUnitDrains) {
  SingleCoreRun run(R"(
    li r1, 0
    li r2, 256
    mxu.ldw m0, r1
    mxu.mm m0, r1, r2, r1
    signal mxu0, f1, 1
    wait seq, f1, 1
    halt
  )",
                    /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  // ldw issues at cycle 2; the signal fires when the 256-row stream ends; the wait costs
  // sync_cycles.
  const CoreConfig& c = run.board.core;
  EXPECT_EQ(r.cycles, 2 + c.mxu_weight_load_cycles + 256 + c.sync_cycles);
}

// A DMA copy runs on an engine after its instruction issues; `signal dma` still waits for
// it, so the second copy starts only when the first has landed (no overlap, two latencies).
TEST(CoreTiming, DmaSignalWaitsForCopiesInFlight) {
  SingleCoreRun run(R"(
    .desc mb rows=1 row_bytes=1048576 src_stride=0 dst_stride=0
    li r1, 0
    li r2, 0
    dma.hv r2, r1, mb, f1
    signal dma, f0, 1
    wait seq, f0, 1
    dma.hv r2, r1, mb, f1
    wait seq, f1, 2
    halt
  )",
                    /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  const CoreConfig& c = run.board.core;
  const double copy_fs = DmaAloneFs(c, 1 << 20, c.hbm_bandwidth_bytes_per_s);
  EXPECT_GE(static_cast<double>(r.end_fs), 2 * copy_fs);
  EXPECT_NEAR(static_cast<double>(r.end_fs),
              2 * copy_fs + static_cast<double>(CyclesToFs(c, 4 + 2 * c.sync_cycles)),
              0.002 * copy_fs);
}

TEST(CoreTiming, DmaIntoSmemGivesTheSequencerDataDependentAddresses) {
  // A gather in miniature: two row indices come from HBM into SMEM, the sequencer loads
  // them and copies those rows of a table; the second copy waits for the index copy.
  SingleCoreRun run(R"(
    .desc idx rows=1 row_bytes=8 src_stride=0 dst_stride=0
    .desc row rows=1 row_bytes=16 src_stride=0 dst_stride=0
    li r1, 0
    li r2, 64
    dma.hs r2, r1, idx, f1
    wait seq, f1, 1
    sld r3, r2, 0
    sld r4, r2, 4
    li r5, 4096
    li r6, 8192
    muli r3, r3, 16
    add r3, r3, r5
    dma.hh r6, r3, row, f2
    muli r4, r4, 16
    add r4, r4, r5
    addi r6, r6, 16
    dma.hh r6, r4, row, f2
    wait seq, f2, 2
    halt
  )");
  const int32_t indices[2] = {5, 2};
  run.core->hbm().Write(0, indices, sizeof indices);
  std::vector<float> table(10 * 4);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i);
  run.core->hbm().Write(4096, table.data(), table.size() * 4);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  float got[8];
  run.core->hbm().Read(8192, got, sizeof got);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(got[k], table[5 * 4 + k]);
    EXPECT_EQ(got[4 + k], table[2 * 4 + k]);
  }
  const CoreConfig& c = run.board.core;
  EXPECT_GE(r.end_fs, 2 * CyclesToFs(c, c.dma_latency_cycles));  // index copy, then rows
}

}  // namespace
}  // namespace tpusim::sim
