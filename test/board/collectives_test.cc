// Reduce-scatter, all-gather and collective-permute over replica groups: exact values on
// every core, in XLA's part order.
#include <gmock/gmock.h>

#include "board_test_util.h"
#include "compiler/collectives/ring_allreduce.h"
#include "compiler/collectives/ring_collectives.h"

namespace tpusim::sim {
namespace {
using namespace collectives;
using testing::BoardRun;

constexpr uint64_t kIn = 0, kOut = 0x1000000;  // HBM addresses

float Value(int core, uint64_t i) { return static_cast<float>((i * 3 + core * 17) % 89) - 44; }

RingCollectiveSpec Spec(std::vector<std::vector<int>> groups, uint64_t bytes) {
  BoardConfig b = LoadConfig("v3-8");
  RingCollectiveSpec spec;
  spec.replica_groups = std::move(groups);
  spec.board_ring = TorusRing(b.ici.torus_x, b.ici.torus_y, b.cores_per_chip);
  spec.input_address = kIn;
  spec.output_address = kOut;
  spec.input_bytes = bytes;
  return spec;
}

void FillInputs(BoardRun& run, uint64_t elems) {
  for (int c = 0; c < 8; ++c) {
    std::vector<float> x(elems);
    for (uint64_t i = 0; i < elems; ++i) x[i] = Value(c, i);
    run.sim->core(c).hbm().Write(kIn, x.data(), x.size() * 4);
  }
}

std::vector<float> Output(BoardRun& run, int core, uint64_t elems) {
  std::vector<float> y(elems);
  run.sim->core(core).hbm().Read(kOut, y.data(), y.size() * 4);
  return y;
}

TEST(Collectives, ReduceScatterGivesEachMemberItsPartInGroupOrder) {
  // Two groups written out of ring order; member g of a group gets part g.
  std::vector<std::vector<int>> groups = {{3, 0, 2, 1}, {4, 5, 7, 6}};
  const uint64_t part = 4096;  // f32 elements per part (16 KiB)
  RingCollectiveSpec spec = Spec(groups, 4 * part * 4);
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c) programs[c] = ReduceScatterProgram(spec, c);
  BoardRun run(programs);
  FillInputs(run, 4 * part);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& g : groups) {
    for (size_t idx = 0; idx < g.size(); ++idx) {
      std::vector<float> y = Output(run, g[idx], part);
      for (uint64_t i = 0; i < part; i += 37) {
        float want = 0;
        for (int member : g) want += Value(member, idx * part + i);
        ASSERT_EQ(y[i], want) << "core " << g[idx] << " element " << i;
      }
    }
  }
}

TEST(Collectives, ReduceScatterMaxOverAllCores) {
  const uint64_t part = 1024;
  RingCollectiveSpec spec = Spec({}, 8 * part * 4);
  spec.op = ReduceOp::kMax;
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c) programs[c] = ReduceScatterProgram(spec, c);
  BoardRun run(programs);
  FillInputs(run, 8 * part);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c = 0; c < 8; ++c) {
    std::vector<float> y = Output(run, c, part);
    for (uint64_t i = 0; i < part; i += 13) {
      float want = Value(0, c * part + i);
      for (int k = 1; k < 8; ++k) want = std::max(want, Value(k, c * part + i));
      ASSERT_EQ(y[i], want) << "core " << c << " element " << i;
    }
  }
}

TEST(Collectives, AllGatherConcatenatesInGroupOrder) {
  std::vector<std::vector<int>> groups = {{0, 2, 4, 6}, {7, 5, 3, 1}};
  const uint64_t part = 2048;
  RingCollectiveSpec spec = Spec(groups, part * 4);
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c) programs[c] = AllGatherProgram(spec, c);
  BoardRun run(programs);
  FillInputs(run, part);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& g : groups)
    for (int c : g) {
      std::vector<float> y = Output(run, c, 4 * part);
      for (size_t idx = 0; idx < g.size(); ++idx)
        for (uint64_t i = 0; i < part; i += 29)
          ASSERT_EQ(y[idx * part + i], Value(g[idx], i)) << "core " << c << " part " << idx;
    }
}

TEST(Collectives, AllGatherOfPartsSmallerThanAVreg) {
  // 24 floats (96 bytes) per member: the ring copies the parts as they are, no padding.
  const uint64_t part = 24;
  RingCollectiveSpec spec = Spec({}, part * 4);
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c) programs[c] = AllGatherProgram(spec, c);
  BoardRun run(programs);
  FillInputs(run, part);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (int c = 0; c < 8; ++c) {
    std::vector<float> y = Output(run, c, 8 * part + 8);  // 8 words past the end stay zero
    for (uint64_t i = 0; i < 8 * part; ++i)
      ASSERT_EQ(y[i], Value(static_cast<int>(i / part), i % part)) << "core " << c << " " << i;
    for (uint64_t i = 8 * part; i < y.size(); ++i) ASSERT_EQ(y[i], 0.f) << "core " << c;
  }
}

TEST(Collectives, AllGatherAlongAMinorDimensionInterleavesRows) {
  // Each member holds f32[3, 5]; gathered along dimension 1 into f32[3, 4 x 5] per group:
  // row r of the result is the members' rows r side by side, in group order.
  std::vector<std::vector<int>> groups = {{6, 1, 3, 4}, {0, 2, 5, 7}};
  const uint64_t rows = 3, cols = 5;
  RingCollectiveSpec spec = Spec(groups, rows * cols * 4);
  spec.part_rows = rows;
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c) programs[c] = AllGatherProgram(spec, c);
  BoardRun run(programs);
  FillInputs(run, rows * cols);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  for (const auto& g : groups)
    for (int c : g) {
      std::vector<float> y = Output(run, c, rows * 4 * cols);
      for (uint64_t row = 0; row < rows; ++row)
        for (size_t idx = 0; idx < g.size(); ++idx)
          for (uint64_t k = 0; k < cols; ++k)
            ASSERT_EQ(y[(row * 4 + idx) * cols + k], Value(g[idx], row * cols + k))
                << "core " << c << " row " << row << " member " << idx;
    }
}

TEST(Collectives, CollectivePermuteMovesEachSourceToItsTargetAndZeroesTheRest) {
  std::vector<std::pair<int, int>> pairs = {{0, 5}, {5, 0}, {1, 2}, {3, 7}};
  const uint64_t elems = 8192;
  std::vector<std::string> programs(8);
  for (int c = 0; c < 8; ++c)
    programs[c] = CollectivePermuteProgram(pairs, kIn, kOut, elems * 4, c);
  BoardRun run(programs);
  FillInputs(run, elems);
  for (int c = 0; c < 8; ++c) {  // outputs start non-zero, so zeroing is visible
    std::vector<float> junk(elems, 9.f);
    run.sim->core(c).hbm().Write(kOut, junk.data(), junk.size() * 4);
  }
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::map<int, int> source_of;
  for (auto [s, t] : pairs) source_of[t] = s;
  for (int c = 0; c < 8; ++c) {
    std::vector<float> y = Output(run, c, elems);
    for (uint64_t i = 0; i < elems; i += 101) {
      float want = source_of.count(c) ? Value(source_of[c], i) : 0.f;
      ASSERT_EQ(y[i], want) << "core " << c << " element " << i;
    }
  }
}

TEST(Collectives, BadGroupsAndSizesAreClearErrors) {
  RingCollectiveSpec spec = Spec({{0, 1}, {2, 3}}, 2 * 4096);
  EXPECT_THROW(ReduceScatterProgram(spec, 5), std::invalid_argument);  // in no group
  spec.input_bytes = 1000;
  EXPECT_THROW(ReduceScatterProgram(spec, 0), std::invalid_argument);
  EXPECT_THROW(CollectivePermuteProgram({{0, 2}, {1, 2}}, kIn, kOut, 4096, 2),
               std::invalid_argument);        // two sources for one target
  spec.input_bytes = 30, spec.part_rows = 1;  // not whole 4-byte words
  EXPECT_THROW(AllGatherProgram(spec, 0), std::invalid_argument);
  spec.input_bytes = 24, spec.part_rows = 4;  // rows of 6 bytes
  EXPECT_THROW(AllGatherProgram(spec, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::sim
