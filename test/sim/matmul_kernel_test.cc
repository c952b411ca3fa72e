// The shipped kernel examples/kernels/matmul_db.s: values against a host reference,
// and MXU occupancy against the formulas.
#include "kernel_test_util.h"
#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using namespace testing;
constexpr int kN = 1024;

TEST(MatmulKernel, MatchesHostReferenceWithinBf16Tolerance) {
  SingleCoreRun run(ReadText("examples/kernels/matmul_db.s"));
  auto a = RandomBf16Values(kN * kN, 1), b = RandomBf16Values(kN * kN, 2);
  auto abits = ToBf16Bits(a), bbits = ToBf16Bits(b);
  run.core->hbm().Write(0x000000, abits.data(), abits.size() * 2);
  run.core->hbm().Write(0x200000, bbits.data(), bbits.size() * 2);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<float> c(kN * kN);
  run.core->hbm().Read(0x400000, c.data(), c.size() * 4);
  // Reference: exact bf16 products accumulated in double; the MXU accumulates in f32.
  int checked = 0;
  for (int i = 0; i < kN; i += 37) {
    for (int j = 0; j < kN; j += 13) {
      double ref = 0, mag = 0;
      for (int k = 0; k < kN; ++k) {
        ref += double(a[i * kN + k]) * b[k * kN + j];
        mag += std::fabs(double(a[i * kN + k]) * b[k * kN + j]);
      }
      ASSERT_NEAR(c[i * kN + j], ref, 1e-5 * mag + 1e-6) << "C[" << i << "," << j << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000);
}

TEST(MatmulKernel, KeepsEachMxuBusyAtLeastNinetyPercent) {
  SingleCoreRun run(ReadText("examples/kernels/matmul_db.s"), /*functional=*/false);
  RunReport r = run.Run();
  ASSERT_TRUE(r.ok) << r.error;
  int mxus = 0;
  for (const UnitReport& u : r.units) {
    if (u.name != "mxu0" && u.name != "mxu1") continue;
    ++mxus;
    // 1024 rows x 8 k-blocks x 4 column blocks, one row per cycle.
    EXPECT_EQ(run.Cycles(u.busy_fs), 1024 * 8 * 4) << u.name;
    EXPECT_GE(u.busy_percent, 90.0) << u.name << " over " << r.cycles << " cycles";
  }
  EXPECT_EQ(mxus, 2);
}

}  // namespace
}  // namespace tpusim::sim
