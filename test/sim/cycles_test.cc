// CoreContext::Cycles caches the cycle length and stays bit-identical to CyclesToFs.
#include <gtest/gtest.h>

#include "sim/config.h"
#include "sim/core_context.h"
#include "sim/timing.h"

namespace tpusim::sim {
namespace {

TEST(Cycles, EqualCyclesToFsForEveryPresetAndFollowTheConfig) {
  const CoreConfig v3 = LoadConfig("v3-8").core, v2 = LoadConfig("v2-8").core;
  CoreContext ctx;
  for (const CoreConfig* cfg : {&v3, &v2, &v3}) {  // switching back re-reads the clock
    ctx.cfg = cfg;
    for (int64_t n = 0; n < 100'000; n += 1 + n / 7) {
      ASSERT_EQ(ctx.Cycles(n), CyclesToFs(*cfg, n)) << n;
      ASSERT_EQ(ctx.Cycles(n),
                static_cast<uint64_t>(static_cast<double>(n) * cfg->cycle_fs() + 0.5));
    }
  }
  ctx.cfg = &v3;
  EXPECT_EQ(ctx.Cycles(1), 1063830u);  // 1e15 / 940e6 = 1063829.79 fs
  EXPECT_EQ(ctx.Cycles(1'000'000'000), 1'063'829'787'234'043u);
}

}  // namespace
}  // namespace tpusim::sim
