// Ring all-reduce over the eight cores of a v3-8: exact values on every core, time
// against the model of docs/collectives.md, and a mismatched collective as a deadlock.
#include <gmock/gmock.h>

#include <cstdio>

#include "board_test_util.h"
#include "compiler/collectives/ring_allreduce.h"
#include "compiler/collectives/ring_collectives.h"
#include "sim/timing.h"

namespace tpusim::sim {
namespace {
using collectives::RingAllReduceProgram;
using collectives::RingAllReduceSpec;
using testing::AllReduceInput;
using testing::BoardRun;
using testing::WriteAllReduceInputs;

constexpr uint64_t kElems = 1 << 20;  // f32[1M], 4 MiB per core

RingAllReduceSpec Spec(const BoardConfig& b, collectives::ReduceOp op, uint64_t elems = kElems) {
  RingAllReduceSpec spec;
  spec.ring = collectives::TorusRing(b.ici.torus_x, b.ici.torus_y, b.cores_per_chip);
  spec.bytes = elems * 4;
  spec.op = op;
  return spec;
}

std::vector<std::string> Programs(const RingAllReduceSpec& spec) {
  std::vector<std::string> programs(spec.ring.size());
  for (size_t p = 0; p < spec.ring.size(); ++p)
    programs[spec.ring[p]] = RingAllReduceProgram(spec, static_cast<int>(p));
  return programs;
}

// Every `step`-th element of core `core`'s result at `address` is the sum of the inputs of
// the cores in `members`.
void ExpectSums(BoardRun& run, int core, uint64_t address, uint64_t elems, uint64_t step,
                const std::vector<int>& members = {0, 1, 2, 3, 4, 5, 6, 7}) {
  std::vector<float> y(elems);
  run.sim->core(core).hbm().Read(address, y.data(), y.size() * 4);
  for (uint64_t i = 0; i < elems; i += step) {
    float want = 0;
    for (int k : members) want += AllReduceInput(k, i);
    ASSERT_EQ(y[i], want) << "core " << core << " element " << i;
  }
}

TEST(AllReduce, SumIsExactOnEveryCore) {
  BoardConfig board = LoadConfig("v3-8");
  RingAllReduceSpec spec = Spec(board, collectives::ReduceOp::kSum);
  BoardRun run(Programs(spec));
  WriteAllReduceInputs(run, kElems);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c = 0; c < 8; ++c) ExpectSums(run, c, 0, kElems, 997);
}

TEST(AllReduce, ArraysAbove4MiBGoSegmentBySegment) {
  BoardConfig board = LoadConfig("v3-8");
  const uint64_t elems = 3 << 20;  // 12 MiB: six 2 MiB segments on alternate buffer sets
  BoardRun run(Programs(Spec(board, collectives::ReduceOp::kSum, elems)));
  WriteAllReduceInputs(run, elems);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  ExpectSums(run, 3, 0, elems, 1009);
}

TEST(AllReduce, MaxIsExactOnEveryCore) {
  BoardConfig board = LoadConfig("v3-8");
  BoardRun run(Programs(Spec(board, collectives::ReduceOp::kMax)));
  WriteAllReduceInputs(run, kElems);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> y(kElems);
  run.sim->core(5).hbm().Read(0, y.data(), y.size() * 4);
  for (uint64_t i = 0; i < kElems; i += 991) {
    float want = AllReduceInput(0, i);
    for (int k = 1; k < 8; ++k) want = std::max(want, AllReduceInput(k, i));
    ASSERT_EQ(y[i], want) << "element " << i;
  }
}

// docs/collectives.md: load + reduce-scatter + all-gather + store. In each phase a chunk
// travels n-1 consecutive hops of the ring, so a phase lasts the slowest run of n-1 hops;
// a hop is DMA start-up, the hop's latency and a chunk over its bandwidth (on-chip or
// ICI). A reduce-scatter hop adds the VPU pass over the chunk at the issue rate of its
// loop (7 instructions and a taken branch per vector register).
double ModelFs(const BoardConfig& b, const std::vector<int>& ring, uint64_t bytes) {
  const CoreConfig& c = b.core;
  const int n = static_cast<int>(ring.size());
  const uint64_t chunk = bytes / n;
  std::vector<double> hop(n);
  for (int i = 0; i < n; ++i) {
    bool onchip = ring[i] / b.cores_per_chip == ring[(i + 1) % n] / b.cores_per_chip;
    double bw = onchip ? b.ici.onchip_bandwidth_bytes_per_s
                       : b.ici.links_per_neighbor * b.ici.link_bandwidth_bytes_per_s;
    int lat = onchip ? b.ici.onchip_latency_cycles : b.ici.latency_cycles;
    hop[i] = static_cast<double>(CyclesToFs(c, c.dma_latency_cycles + lat)) + BytesToFs(chunk, bw);
  }
  double window = 0;  // the slowest n-1 consecutive hops
  for (int start = 0; start < n; ++start) {
    double sum = 0;
    for (int k = 0; k < n - 1; ++k) sum += hop[(start + k) % n];
    window = std::max(window, sum);
  }
  double vregs = static_cast<double>(chunk) / 4096;
  double add = static_cast<double>(
      CyclesToFs(c, static_cast<int64_t>(vregs * (7 * c.scalar_cycles + c.branch_penalty_cycles))));
  double io = DmaAloneFs(c, bytes, c.hbm_bandwidth_bytes_per_s);
  return 2 * io + (window + (n - 1) * add) + window;
}

TEST(AllReduce, TimeIsWithinTenPercentOfTheRingModel) {
  // 4 MiB less one ring granule: not whole registers per half, so one ring carries it all.
  const uint64_t elems = kElems - 8192;
  BoardConfig board = LoadConfig("v3-8");
  const RingAllReduceSpec spec = Spec(board, collectives::ReduceOp::kSum, elems);
  ASSERT_FALSE(collectives::GoesAsHalves(spec.bytes, 8));
  BoardRun run(Programs(spec), /*functional=*/false);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  double model = ModelFs(board, spec.ring, elems * 4);
  std::printf("all-reduce f32[1M - 8K] on 8 cores: simulated %.2f us, model %.2f us\n", r.time_us,
              model / 1e9);
  EXPECT_NEAR(static_cast<double>(r.end_fs), model, 0.10 * model)
      << "simulated " << r.time_us << " us, model " << model / 1e9 << " us";
  // The bandwidth term alone: 2(n-1)/n x bytes over the slowest link.
  double bw_term = 2.0 * 7 / 8 * elems * 4 * 1e15 /
                   (board.ici.links_per_neighbor * board.ici.link_bandwidth_bytes_per_s);
  EXPECT_GT(static_cast<double>(r.end_fs), bw_term);
}

TEST(AllReduce, FourMiBGoesAsHalvesOneEachWayAndBeatsOneRing) {
  BoardConfig board = LoadConfig("v3-8");
  const RingAllReduceSpec spec = Spec(board, collectives::ReduceOp::kSum);
  ASSERT_TRUE(collectives::GoesAsHalves(spec.bytes, 8));
  BoardRun run(Programs(spec), /*functional=*/false);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const double one_ring = ModelFs(board, spec.ring, kElems * 4);
  std::printf("all-reduce f32[1M] as halves: %.2f us (one ring's model %.2f us)\n", r.time_us,
              one_ring / 1e9);
  EXPECT_LT(static_cast<double>(r.end_fs), 0.8 * one_ring);
}

TEST(AllReduce, TupleSegmentsGoInPairsRoundBothWaysExactly) {
  // Two gradients, 10 MiB and 6 MiB: eight 2 MiB segments in four pairs, one segment of
  // each pair round the ring each way. Results go to their own buffers.
  BoardConfig board = LoadConfig("v3-8");
  RingAllReduceSpec spec = Spec(board, collectives::ReduceOp::kSum, 4 << 20);
  const uint64_t a = 10 << 20, b = 6 << 20, out = 32 << 20;
  spec.pieces = {{0, a, out}, {a, b, out + a}};
  BoardRun run(Programs(spec));
  const uint64_t elems = spec.bytes / 4;
  WriteAllReduceInputs(run, elems);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c : {0, 5}) ExpectSums(run, c, out, elems, 1031);
  // A pair takes about one segment's time: well under the segments one after another.
  const double segment = ModelFs(board, spec.ring, collectives::kRingSegmentBytes);
  std::printf("tuple all-reduce of 16 MiB: %.2f us (one 2 MiB segment's model %.2f us)\n",
              r.time_us, segment / 1e9);
  EXPECT_LT(static_cast<double>(r.end_fs), 0.65 * 8 * segment);
  EXPECT_GT(static_cast<double>(r.end_fs), 4 * segment);
}

TEST(AllReduce, BidirectionalRingsAreExactAndBeatOneRing) {
  BoardConfig board = LoadConfig("v3-8");
  RingAllReduceSpec spec = Spec(board, collectives::ReduceOp::kSum);
  spec.bidirectional = true;
  BoardRun run(Programs(spec));
  WriteAllReduceInputs(run, kElems);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c : {0, 3, 6}) ExpectSums(run, c, 0, kElems, 1013);
  // Each direction carries half the bytes: clearly faster than one ring's model.
  double one_ring = ModelFs(board, spec.ring, kElems * 4);
  std::printf("bidirectional all-reduce f32[1M]: %.2f us (one ring's model %.2f us)\n", r.time_us,
              one_ring / 1e9);
  EXPECT_LT(static_cast<double>(r.end_fs), 0.85 * one_ring);
}

TEST(AllReduce, EachReplicaGroupReducesOnItsOwn) {
  BoardConfig board = LoadConfig("v3-8");
  collectives::RingCollectiveSpec groups;
  groups.replica_groups = {{0, 1, 4, 5}, {2, 3, 6, 7}};
  groups.board_ring = collectives::TorusRing(board.ici.torus_x, board.ici.torus_y, 2);
  const uint64_t elems = 1 << 16;
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c) {
    auto [ring, pos] = collectives::GroupRing(groups, c);
    RingAllReduceSpec spec;
    spec.ring = ring;
    spec.bytes = elems * 4;
    programs[c] = RingAllReduceProgram(spec, pos);
  }
  BoardRun run(programs);
  WriteAllReduceInputs(run, elems);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& g : groups.replica_groups) {
    for (int c : g) ExpectSums(run, c, 0, elems, 211, g);
  }
}

TEST(AllReduce, MissingParticipantIsReportedAsDeadlock) {
  BoardConfig board = LoadConfig("v3-8");
  auto programs = Programs(Spec(board, collectives::ReduceOp::kSum));
  programs[6] = "halt\n";  // core 6 never joins
  BoardRun run(programs, /*functional=*/false);
  RunReport r = run.sim->Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("deadlock"));
  EXPECT_THAT(r.error, ::testing::HasSubstr("core 7 vpu waits for flag f1 >= 1 (it is 0)"));
}

}  // namespace
}  // namespace tpusim::sim
