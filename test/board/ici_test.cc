// DMA between cores: routes over the 2x2 torus, and copy times from link bandwidth and
// hop latency.
#include <gmock/gmock.h>

#include "board_test_util.h"
#include "sim/timing.h"

namespace tpusim::sim {
namespace {
using testing::BoardRun;

// Core 0 copies 1 MiB of its VMEM into core `dst`'s VMEM; `dst` waits for it.
std::vector<std::string> CopyPrograms(int dst, int cores) {
  std::vector<std::string> p(cores, "halt\n");
  p[0] =
      ".desc mb rows=1 row_bytes=1048576 src_stride=0 dst_stride=0\n"
      "li r1, 1\nshli r1, r1, 48\n"  // own VMEM
      "li r2, " +
      std::to_string(dst) +
      "\nshli r2, r2, 56\nor r2, r2, r1\n"  // dst VMEM
      "dma.g r2, r1, mb, f3\nhalt\n";
  p[dst] = "wait seq, f3, 1\nhalt\n";
  return p;
}

TEST(Ici, RoutesTakeTheShortWayInXThenY) {
  BoardRun run({"halt\n"});
  IciFabric fabric("f", run.board);
  EXPECT_EQ(fabric.Route(0, 1).size(), 1u);  // same chip
  EXPECT_TRUE(fabric.Route(0, 1)[0].onchip);
  auto hops = fabric.Route(1, 7);  // chip 0 -> chip 3: x then y
  ASSERT_EQ(hops.size(), 2u);
  EXPECT_EQ(hops[0].from, 0);
  EXPECT_EQ(hops[0].to, 1);
  EXPECT_EQ(hops[1].from, 1);
  EXPECT_EQ(hops[1].to, 3);
}

TEST(Ici, CopyToAnotherChipTakesLatencyPlusBytesOverTheLinks) {
  BoardRun run(CopyPrograms(2, 8));
  // Fill the source so the receiver's bytes can be checked.
  std::vector<uint8_t> src(1 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  run.sim->core(0).vmem().Write(0, src.data(), src.size());
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  std::vector<uint8_t> got(1 << 20);
  run.sim->core(2).vmem().Read(0, got.data(), got.size());
  EXPECT_EQ(got, src);
  const BoardConfig& b = run.board;
  double bw = b.ici.links_per_neighbor * b.ici.link_bandwidth_bytes_per_s;
  // dispatch after 6 scalar instructions; DMA latency, one hop, then the bytes stream
  // through the link (the VMEM ports are faster); the waiting core's wait costs a cycle.
  double expect = CyclesToFs(b.core, 6 + b.core.dma_latency_cycles + b.ici.latency_cycles +
                                         b.core.sync_cycles) +
                  BytesToFs(1 << 20, bw);
  EXPECT_NEAR(static_cast<double>(r.end_fs), expect, 0.001 * expect);
}

TEST(Ici, CopyToTheOtherCoreOfTheChipUsesTheOnChipPath) {
  BoardRun run(CopyPrograms(1, 2), /*functional=*/false);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const BoardConfig& b = run.board;
  double expect = CyclesToFs(b.core, 6 + b.core.dma_latency_cycles + b.ici.onchip_latency_cycles +
                                         b.core.sync_cycles) +
                  BytesToFs(1 << 20, b.ici.onchip_bandwidth_bytes_per_s);
  EXPECT_NEAR(static_cast<double>(r.end_fs), expect, 0.001 * expect);
}

TEST(Ici, AddressOfACoreTheBoardLacksIsAnError) {
  auto programs = CopyPrograms(1, 2);
  programs[0].replace(programs[0].find("li r2, 1\n"), 9, "li r2, 9\n");
  programs[1] = "halt\n";
  BoardRun run(programs, /*functional=*/false);
  RunReport r = run.sim->Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("destination global address names core 9"));
}

}  // namespace
}  // namespace tpusim::sim
