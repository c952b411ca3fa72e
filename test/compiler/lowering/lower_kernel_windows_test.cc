// Kernel windows (compiler/lowering/driver/kernel_windows.cc): an entry kernel that touches
// none of the HBM the kernel before it writes, nor writes what it reads, issues in the other
// flag bank and a VMEM range beside it while that one drains; a dependent kernel waits for
// the drain first; with windows off every kernel drains alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "compiler/assembly/asm_util.h"
#include "test/compiler/lowering/kernel_window_modules.h"
#include "test/compiler/lowering/lower_test_util.h"

namespace tpusim {
namespace {

using testing::Board;
using testing::Compile;
using testing::Find;
using ::testing::HasSubstr;
using ::testing::Not;

// The text between the tags of kernels `a` and `b` of core 0's program.
std::string Between(const std::string& p, const std::string& a, const std::string& b) {
  const size_t from = p.find(".tag \"" + a + "\""), to = p.find(".tag \"" + b + "\"");
  EXPECT_NE(from, std::string::npos) << a;
  EXPECT_NE(to, std::string::npos) << b;
  EXPECT_LT(from, to);
  return from < to && to != std::string::npos ? p.substr(from, to - from) : "";
}

TEST(KernelWindows, AnIndependentKernelIssuesBesideTheOneStillDraining) {
  auto c = Compile(testing::kIndependentKernels);
  ASSERT_TRUE(c);
  const std::string& p = c->lowered.programs.at(0);
  // e's queues signal its barrier; n issues in bank 1 above e's VMEM; only then does the
  // sequencer await e's drain, in bank 0, and clear bank 0's flags.
  const std::string e_to_n = Between(p, "e", "n");
  EXPECT_THAT(e_to_n, Not(HasSubstr("wait seq, f30")));
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(e_to_n, m, std::regex(R"(signal dma, f30, 1\n    window 1, (\d+)\n)")))
      << e_to_n;
  const lowering::LoweredOp* e = Find(c->lowered, "e");
  ASSERT_TRUE(e);
  EXPECT_GE(std::stoll(m[1]), e->vmem_bytes);
  EXPECT_EQ(std::stoll(m[1]) % lowering::kWindowAlign, 0);
  EXPECT_THAT(Between(p, "n", "s"),
              HasSubstr("signal dma, f30, 1\n    window 0, 0\n    wait seq, f30, 4\n"
                        "    sflag f0, 0\n"));
}

TEST(KernelWindows, AKernelReadingTheLastOnesResultWaitsForItsDrain) {
  auto c = Compile(testing::kIndependentKernels);
  ASSERT_TRUE(c);
  const std::string d_to_e = Between(c->lowered.programs.at(0), "d", "e");  // e = exp(d)
  EXPECT_THAT(d_to_e, HasSubstr("wait seq, f30, 4\n"));
  EXPECT_THAT(d_to_e, Not(HasSubstr("window")));
}

TEST(KernelWindows, OffEveryKernelDrainsBeforeTheNextIssues) {
  CompileTarget t = Board();
  t.lowering.kernel_windows = false;
  auto c = Compile(testing::kIndependentKernels, t);
  ASSERT_TRUE(c);
  const std::string& p = c->lowered.programs.at(0);
  EXPECT_THAT(p, Not(HasSubstr("window")));
  EXPECT_THAT(Between(p, "e", "n"), HasSubstr("wait seq, f30, 4\n"));
}

TEST(AsmUtil, DropTrailingSeqWaitsLeavesTheBarrierToAwaitTheLastCopies) {
  const std::string k =
      "    dma.vh r1, r2, d, f0\n    wait seq, f0, 1\nend:\n    wait seq, f1, 2\n# done\n";
  EXPECT_EQ(assembly::DropTrailingSeqWaits(k),
            "    dma.vh r1, r2, d, f0\n    wait seq, f0, 1\nend:\n");
  const std::string unit_tail = "    dma.vh r1, r2, d, f0\n    wait vpu, f0, 1\n";
  EXPECT_EQ(assembly::DropTrailingSeqWaits(unit_tail), unit_tail);
}

}  // namespace
}  // namespace tpusim
