// A cycle-by-cycle systolic array (systolic_array_model.h) checks the MXU's closed-form
// timing in sim/timing.h and its values, for full and partial tiles and with
// double-buffered weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "sim/config.h"
#include "sim/timing.h"
#include "systolic_array_model.h"

namespace tpusim::sim {
namespace {
using testing::Matrix;
using testing::SystolicArray;

// Small integers: every product and sum is exact in float, in any order.
Matrix RandomInts(int rows, int cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-4, 4);
  Matrix m(rows, std::vector<float>(cols));
  for (auto& r : m)
    for (float& v : r) v = static_cast<float>(d(rng));
  return m;
}

// x (M x K) times w (K x N), zero-extended to `out_cols` columns.
Matrix Product(const Matrix& x, const Matrix& w, int out_cols) {
  Matrix out(x.size(), std::vector<float>(out_cols, 0.f));
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t k = 0; k < w.size(); ++k)
      for (size_t n = 0; n < w[k].size(); ++n) out[i][n] += x[i][k] * w[k][n];
  return out;
}

const CoreConfig& V3Core() {
  static const CoreConfig core = LoadConfig("v3-8").core;
  return core;
}

TEST(SystolicArray, ValuesEqualTheMatrixProduct) {
  SystolicArray a(8, 8);
  Matrix w = RandomInts(8, 8, 1), x = RandomInts(13, 8, 2);
  a.SetWeights(w);
  int id = a.EnqueueMatmul(x);
  a.Run();
  EXPECT_EQ(a.matmul(id).out, Product(x, w, 8));
  EXPECT_EQ(a.matmul(id).writes, 13 * 8);
}

TEST(SystolicArray, ResultIJLeavesColumnNAtCycleIPlusRMinus1PlusN) {
  // Record the write cycle of every result of a 3-row matmul on a 4 x 6 array by
  // stepping and watching the write counter.
  SystolicArray a(4, 6);
  a.SetWeights(RandomInts(4, 6, 3));
  int id = a.EnqueueMatmul(RandomInts(3, 4, 4));
  std::vector<int64_t> writes_at_end_of;  // cumulative writes after each cycle
  while (!a.Idle()) {
    a.Step();
    writes_at_end_of.push_back(a.matmul(id).writes);
  }
  // Results (i, n) with i + 3 + n == t are written at the end of cycle t.
  for (int64_t t = 0; t < static_cast<int64_t>(writes_at_end_of.size()); ++t) {
    int64_t expected = 0;
    for (int i = 0; i < 3; ++i)
      for (int n = 0; n < 6; ++n) expected += i + 3 + n <= t;
    EXPECT_EQ(writes_at_end_of[t], expected) << "cycle " << t;
  }
  EXPECT_EQ(a.matmul(id).last_write, 2 + 3 + 5);
}

// The pipeline of the brief (result (i, n) in the accumulator at the end of cycle
// i + (R - 1) + n) completes one cycle before MatmulLatencyCycles; the formula's
// R + C - 1 fill/drain corresponds to one more register between the bottom of the
// array and the accumulator (output_stages = 1).
TEST(SystolicArray, LastResultTimingMatchesMatmulLatencyCycles) {
  const CoreConfig& cfg = V3Core();
  ASSERT_EQ(cfg.mxu_rows, 128);
  ASSERT_EQ(cfg.mxu_cols, 128);
  Matrix w = RandomInts(128, 128, 5);
  for (int64_t m : {1, 7, 8, 128, 300}) {
    Matrix x = RandomInts(static_cast<int>(m), 128, 6 + static_cast<uint32_t>(m));
    for (int stages : {0, 1}) {
      SystolicArray a(cfg.mxu_rows, cfg.mxu_cols, stages);
      a.SetWeights(w);
      int id = a.EnqueueMatmul(x);
      a.Run();
      const auto& r = a.matmul(id);
      EXPECT_EQ(r.first_entry, 0);
      EXPECT_EQ(r.last_entry + 1 - r.first_entry, MatmulStreamCycles(m)) << "M=" << m;
      EXPECT_EQ(r.last_write + 1, MatmulLatencyCycles(cfg, m) - 1 + stages)
          << "M=" << m << " output_stages=" << stages;
      EXPECT_EQ(r.last_write + 1, m + cfg.mxu_rows + cfg.mxu_cols - 2 + stages);
      if (m == 7) {
        EXPECT_EQ(r.out, Product(x, w, 128));
      }
    }
  }
}

TEST(SystolicArray, PartialTileTakesTheSameCyclesAsAFullOne) {
  const CoreConfig& cfg = V3Core();
  const int R = cfg.mxu_rows, C = cfg.mxu_cols;
  Matrix w_part = RandomInts(5, 17, 7), x_part = RandomInts(3, 5, 8);  // K' = 5, N' = 17
  Matrix w_full = RandomInts(R, C, 9), x_full = RandomInts(3, R, 10);
  for (int stages : {0, 1}) {
    SystolicArray part(R, C, stages), full(R, C, stages);
    part.SetWeights(w_part);
    full.SetWeights(w_full);
    int p = part.EnqueueMatmul(x_part), f = full.EnqueueMatmul(x_full);
    EXPECT_EQ(part.Run(), full.Run());
    EXPECT_EQ(part.matmul(p).first_entry, full.matmul(f).first_entry);
    EXPECT_EQ(part.matmul(p).last_entry, full.matmul(f).last_entry);
    EXPECT_EQ(part.matmul(p).last_write, full.matmul(f).last_write);
    EXPECT_EQ(part.matmul(p).last_write + 1, MatmulLatencyCycles(cfg, 3) - 1 + stages);
    EXPECT_EQ(part.matmul(p).writes, 3 * C);  // padding columns are written (zeros)
    EXPECT_EQ(part.matmul(p).out, Product(x_part, w_part, C));
    EXPECT_EQ(full.matmul(f).out, Product(x_full, w_full, C));
  }
}

TEST(SystolicArray, BackToBackMatmulsStreamOneRowPerCycle) {
  const CoreConfig& cfg = V3Core();
  const int R = cfg.mxu_rows, C = cfg.mxu_cols;
  Matrix w = RandomInts(R, C, 11);
  Matrix x1 = RandomInts(40, R, 12), x2 = RandomInts(25, R, 13);
  SystolicArray a(R, C, /*output_stages=*/1);
  a.SetWeights(w);
  int m1 = a.EnqueueMatmul(x1), m2 = a.EnqueueMatmul(x2);
  a.Run();
  const auto &r1 = a.matmul(m1), &r2 = a.matmul(m2);
  EXPECT_EQ(r1.last_entry + 1 - r1.first_entry, MatmulStreamCycles(40));
  EXPECT_EQ(r2.first_entry, r1.last_entry + 1);  // no stall between the matmuls
  EXPECT_EQ(r2.first_entry, MatmulStreamCycles(40));
  EXPECT_EQ(r2.last_entry + 1 - r2.first_entry, MatmulStreamCycles(25));
  EXPECT_EQ(r2.last_write + 1, MatmulStreamCycles(40) + MatmulLatencyCycles(cfg, 25));
  EXPECT_EQ(r1.out, Product(x1, w, C));
  EXPECT_EQ(r2.out, Product(x2, w, C));
}

// Matmul A on tile W1 while W2 loads into the shadow bank (one row per cycle, from
// cycle 0); matmul B latches W2 when its first row enters. The transaction-level MXU
// starts B at max(end of A's stream, end of the load) and has its results ready
// MatmulLatencyCycles later.
TEST(SystolicArray, DoubleBufferedWeightLoadHidesUnderAMatmulOf128RowsOrMore) {
  const CoreConfig& cfg = V3Core();
  const int R = cfg.mxu_rows, C = cfg.mxu_cols;
  ASSERT_EQ(WeightLoadCycles(cfg), R);  // the model loads one weight row per cycle
  Matrix w1 = RandomInts(R, C, 14), w2 = RandomInts(R, C, 15);
  for (int64_t m : {64, 128, 200}) {
    Matrix xa = RandomInts(static_cast<int>(m), R, 16), xb = RandomInts(static_cast<int>(m), R, 17);
    SystolicArray a(R, C, /*output_stages=*/1);
    a.SetWeights(w1);
    int ma = a.EnqueueMatmul(xa);
    a.StartWeightLoad(w2);  // starts in cycle 0, as A latches W1
    int mb = a.EnqueueMatmul(xb);
    a.Run();
    const auto &ra = a.matmul(ma), &rb = a.matmul(mb);
    EXPECT_EQ(a.load_start(), 0);
    EXPECT_EQ(a.load_done(), WeightLoadCycles(cfg));
    EXPECT_NE(ra.bank, rb.bank);
    int64_t sim_start_b = std::max(MatmulStreamCycles(m), WeightLoadCycles(cfg));
    EXPECT_EQ(rb.first_entry, sim_start_b) << "M=" << m;
    EXPECT_EQ(rb.last_write + 1, sim_start_b + MatmulLatencyCycles(cfg, m)) << "M=" << m;
    if (m >= WeightLoadCycles(cfg)) {
      EXPECT_EQ(rb.first_entry, ra.last_entry + 1) << "M=" << m;  // load fully hidden
      EXPECT_EQ(rb.last_write + 1, 2 * m + cfg.mxu_fill_drain_cycles()) << "M=" << m;
    } else {
      EXPECT_GT(rb.first_entry, ra.last_entry + 1) << "M=" << m;  // bubble until loaded
    }
    EXPECT_EQ(ra.out, Product(xa, w1, C));
    EXPECT_EQ(rb.out, Product(xb, w2, C));
  }
}

// The bank freed when B latches still feeds A's last rows for R + C - 2 cycles; the
// model refuses a load that overwrites weights a row in flight still needs.
TEST(SystolicArray, ReloadingABankStillInUseIsAHazard) {
  const int R = 8, C = 8;
  Matrix w1 = RandomInts(R, C, 18), w2 = RandomInts(R, C, 19), w3 = RandomInts(R, C, 20);
  Matrix xa = RandomInts(10, R, 21), xb = RandomInts(10, R, 22);
  for (bool wait : {false, true}) {
    SystolicArray a(R, C);
    a.SetWeights(w1);
    int ma = a.EnqueueMatmul(xa);
    a.StartWeightLoad(w2);
    int mb = a.EnqueueMatmul(xb);
    while (a.matmul(mb).first_entry < 0) a.Step();
    // Row k of A's last row uses PE (k, C - 1) at last_entry + k + C - 1; the load
    // writes row k at (load start) + k.
    int64_t safe = a.matmul(ma).last_entry + C;
    if (wait)
      while (a.cycle() < safe) a.Step();
    a.StartWeightLoad(w3);
    if (wait) {
      a.Run();
      EXPECT_EQ(a.matmul(ma).out, Product(xa, w1, C));
      EXPECT_EQ(a.matmul(mb).out, Product(xb, w2, C));
    } else {
      EXPECT_THROW(a.Run(), std::logic_error);
    }
  }
}

}  // namespace
}  // namespace tpusim::sim
