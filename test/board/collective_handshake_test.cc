// The entry barrier of collectives inside compiled programs (EmitEntryBarrier): a core may
// still run the kernel before the collective, in memory its ring predecessor is about to
// write into. Here core ring[1] first fills all its VMEM with a constant (a long VPU kernel)
// while ring[0] enters the all-reduce at once. Without the barrier ring[0]'s first chunk
// lands in ring[1]'s receive slot and is then overwritten: the sums are wrong (the
// control). With it, no core writes before every core has entered: the sums are exact.
#include <gmock/gmock.h>

#include "board_test_util.h"
#include "compiler/assembly/asm_util.h"
#include "compiler/collectives/ring_allreduce.h"

namespace tpusim::sim {
namespace {
using testing::BoardRun;

constexpr uint64_t kElems = 1 << 20;  // f32[1M], 4 MiB per core: one segment
constexpr uint64_t kMailbox = 1ull << 30;

float Input(int core, uint64_t i) { return static_cast<float>((i * 7 + core * 13) % 101) - 50; }

// Sums wrong on core ring[0] after the all-reduce, with a busy core ring[1].
int WrongSums(bool barrier) {
  const BoardConfig board = LoadConfig("v3-8");
  collectives::RingAllReduceSpec spec;
  spec.ring = collectives::TorusRing(board.ici.torus_x, board.ici.torus_y, board.cores_per_chip);
  spec.bytes = kElems * 4;
  spec.flag_base = assembly::kCollectiveFlagBase;  // as lowered: the barrier resets f0..f15
  if (barrier) spec.mailbox = collectives::Mailbox{kMailbox, 8};
  std::vector<std::string> programs(spec.ring.size());
  for (size_t p = 0; p < spec.ring.size(); ++p)
    programs[spec.ring[p]] = collectives::RingAllReduceProgram(spec, static_cast<int>(p));
  // The kernel before: all 16 MiB of VMEM written twice over by a scalar loop of stores,
  // each store its own VPU instruction at its own time, then the drain barrier.
  const std::string busy =
      "    vmovi v0, 999.0\n    li r6, " + std::to_string(board.core.vmem_bytes) +
      "\n    li r7, 0\n    li r8, 2\npass:\n    li r5, 0\nstore:\n    vst v0, r5\n"
      "    addi r5, r5, 4096\n    blt r5, r6, store\n    addi r7, r7, 1\n    blt r7, r8, pass\n" +
      assembly::DrainBarrier(board.core.mxus);
  programs[spec.ring[1]] = busy + programs[spec.ring[1]];
  BoardRun run(programs);
  for (int c = 0; c < 8; ++c) {
    std::vector<float> x(kElems);
    for (uint64_t i = 0; i < kElems; ++i) x[i] = Input(c, i);
    run.sim->core(c).hbm().Write(0, x.data(), x.size() * 4);
  }
  RunReport r = run.sim->Run();
  EXPECT_TRUE(r.ok) << r.error;
  std::vector<float> y(kElems);
  run.sim->core(spec.ring[0]).hbm().Read(0, y.data(), y.size() * 4);
  int wrong = 0;
  for (uint64_t i = 0; i < kElems; ++i) {
    float want = 0;
    for (int k = 0; k < 8; ++k) want += Input(k, i);
    wrong += y[i] != want;
  }
  return wrong;
}

TEST(CollectiveHandshake, WithoutItABusyReceiverCorruptsTheSum) { EXPECT_GT(WrongSums(false), 0); }

TEST(CollectiveHandshake, TheRingWaitsUntilEveryReceiverHasEntered) {
  EXPECT_EQ(WrongSums(true), 0);
}

}  // namespace
}  // namespace tpusim::sim
