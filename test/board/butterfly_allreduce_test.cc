// The butterfly all-reduce of short arrays (compiler/collectives/butterfly_allreduce.h) on a
// v3-8: exact values on every core for whole groups, replica groups and pieces, and its time
// against the ring's for the batch-norm statistics' sizes.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "board_test_util.h"
#include "compiler/collectives/butterfly_allreduce.h"
#include "compiler/collectives/ring_allreduce.h"

namespace tpusim::sim {
namespace {
using collectives::ButterflyAllReduceProgram;
using collectives::RingAllReduceSpec;
using testing::AllReduceInput;
using testing::BoardRun;
using testing::WriteAllReduceInputs;

// `elems` results of `core` at `address` are the sums over `members` of the inputs from
// element `first` on.
void ExpectSums(BoardRun& run, int core, uint64_t address, uint64_t first, uint64_t elems,
                const std::vector<int>& members) {
  std::vector<float> y(elems);
  run.sim->core(core).hbm().Read(address, y.data(), y.size() * 4);
  for (uint64_t i = 0; i < elems; ++i) {
    float want = 0;
    for (int k : members) want += AllReduceInput(k, first + i);
    ASSERT_EQ(y[i], want) << "core " << core << " element " << i;
  }
}

// One program per core: each core's group is the one in `groups` that holds it.
std::vector<std::string> Programs(const std::vector<std::vector<int>>& groups,
                                  RingAllReduceSpec spec) {
  std::vector<std::string> programs(8);
  for (const auto& g : groups) {
    spec.ring = g;
    for (size_t p = 0; p < g.size(); ++p)
      programs[static_cast<size_t>(g[p])] = ButterflyAllReduceProgram(spec, static_cast<int>(p));
  }
  return programs;
}

const std::vector<int> kBoard = {0, 1, 2, 3, 6, 7, 4, 5};  // any order: rounds go by core

TEST(Butterfly, SumIsExactOnEveryCoreInThreeRounds) {
  RingAllReduceSpec spec;
  spec.bytes = 3000 * 4;  // padded to 3 vregs in VMEM only
  spec.hbm_output = 1 << 20;
  BoardRun run(Programs({kBoard}, spec));
  WriteAllReduceInputs(run, 3072);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c = 0; c < 8; ++c) ExpectSums(run, c, 1 << 20, 0, 3000, kBoard);
  std::vector<float> past(72);  // nothing written beyond the array
  run.sim->core(3).hbm().Read((1 << 20) + 12000, past.data(), past.size() * 4);
  for (float v : past) EXPECT_EQ(v, 0.0f);
}

// A combined all-reduce (batch norm's sums and sums of squares): each piece to its output.
TEST(Butterfly, PiecesGoToTheirOwnOutputs) {
  RingAllReduceSpec spec;
  spec.pieces = {{0, 512 * 4, 1 << 20}, {4096, 256 * 4, (1 << 20) + 65536}};
  BoardRun run(Programs({kBoard}, spec));
  WriteAllReduceInputs(run, 2048);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c : {0, 5, 7}) {
    ExpectSums(run, c, 1 << 20, 0, 512, kBoard);
    ExpectSums(run, c, (1 << 20) + 65536, 1024, 256, kBoard);
  }
}

void ExpectGroupsReduceOnTheirOwn(const std::vector<std::vector<int>>& groups) {
  RingAllReduceSpec spec;
  spec.bytes = 1024 * 4;
  BoardRun run(Programs(groups, spec));
  WriteAllReduceInputs(run, 1024);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& g : groups)
    for (int c : g) ExpectSums(run, c, 0, 0, 1024, g);
}

TEST(Butterfly, GroupsOfFourReduceOnTheirOwn) {
  ExpectGroupsReduceOnTheirOwn({{0, 1, 4, 5}, {2, 3, 6, 7}});
}

TEST(Butterfly, PairsReduceOnTheirOwn) {
  ExpectGroupsReduceOnTheirOwn({{0, 7}, {1, 6}, {2, 5}, {3, 4}});
}

// Batch norm's statistics of 256 features (2 KiB): three rounds of one hop each (on chip,
// x, y) finish before a ring's fourteen steps could pay their chip-to-chip hop latencies
// alone (bench/allreduce_bench.cc's BM_AllReduce compares the two in full).
TEST(Butterfly, ShortArraysFinishWithinTheRingsLatencyFloor) {
  RingAllReduceSpec spec;
  spec.bytes = 512 * 4;
  BoardRun run(Programs({kBoard}, spec), /*functional=*/false);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const double ring_floor_us =
      14.0 * static_cast<double>(run.board.ici.latency_cycles) * run.board.core.cycle_fs() * 1e-9;
  std::printf("butterfly all-reduce of 2 KiB over 8 cores: %.2f us (ring latency floor %.2f)\n",
              r.time_us, ring_floor_us);
  EXPECT_LT(r.time_us, 0.5 * ring_floor_us);
}

TEST(Butterfly, TakesPowersOfTwoUpToItsSize) {
  EXPECT_TRUE(collectives::TakesButterfly(8, collectives::kButterflyMaxBytes));
  EXPECT_TRUE(collectives::TakesButterfly(2, 4));
  EXPECT_FALSE(collectives::TakesButterfly(8, collectives::kButterflyMaxBytes + 4));
  EXPECT_FALSE(collectives::TakesButterfly(6, 1024));
  EXPECT_FALSE(collectives::TakesButterfly(1, 1024));
  EXPECT_FALSE(collectives::TakesButterfly(8, 6));  // not whole 32-bit elements
  RingAllReduceSpec three;
  three.ring = {0, 1, 2};
  three.bytes = 64;
  EXPECT_THROW(ButterflyAllReduceProgram(three, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::sim
