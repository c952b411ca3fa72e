// Bad programs stop the run with one clear error naming the instruction and address;
// a program whose units wait on each other forever is reported as a deadlock.
#include <gmock/gmock.h>

#include "sim_test_util.h"

namespace tpusim::sim {
namespace {
using ::testing::HasSubstr;
using testing::SingleCoreRun;

TEST(SimErrors, DmaOutsideHbmNamesInstructionAndRange) {
  SingleCoreRun run(R"(
    .desc big rows=1 row_bytes=4096 src_stride=0 dst_stride=0
    li r1, 0
    li r2, -4096
    dma.hv r1, r2, big, f0
    halt
  )");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("pc 2 (dma.hv)"));
  EXPECT_THAT(r.error, HasSubstr("source HBM range [-4096, 0) is outside HBM"));
}

TEST(SimErrors, MisalignedVectorLoadNamesAddress) {
  SingleCoreRun run("li r1, 100\nvld v0, r1\nhalt\n", /*functional=*/false);
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("pc 1 (vld): VMEM address 100 is not 256-byte aligned"));
}

TEST(SimErrors, MatmulBeyondTheResultBuffer) {
  SingleCoreRun run(
      "li r1, 0\nli r2, 8\nli r3, 4092\nmxu.ldw m0, r1\nmxu.mm m0, r1, r2, r3\nhalt\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("accumulator rows [4092, 4100) outside the result buffer"));
}

TEST(SimErrors, MissingHaltIsReported) {
  SingleCoreRun run("li r1, 1\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("ran past the end of the program"));
}

TEST(SimErrors, UnitOnAFlagNobodySetsIsADeadlock) {
  SingleCoreRun run("wait mxu0, f5, 1\nli r1, 0\nmxu.ldw m0, r1\nhalt\n");
  RunReport r = run.Run();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("deadlock"));
  EXPECT_THAT(r.error, HasSubstr("core 0 mxu0 waits for flag f5 >= 1 (it is 0)"));
}

}  // namespace
}  // namespace tpusim::sim
