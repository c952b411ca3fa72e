// A kernel ends with a hand-over: a unit signals flag f once its work is done and the
// sequencer waits on f. If f also counts a copy's arrival that a unit's queue waits for, the
// sequencer (far ahead of the units) can take that arrival first and the unit's queue never
// moves: the tiled VPU kernel's index table did so (difftest seeds 341013 and 341146). This
// scans every kernel of the shipped modules under 200 KB of text (the ResNets, BERT and the
// GPTs take minutes to compile under the sanitizers; the small ones held 9 such kernels
// before the fix) for the pattern.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test/compiler/lowering/lower_test_util.h"

namespace tpusim::testing {
namespace {

// "tag fN" for each kernel of `program` (main stream) whose final hand-over flag is also a
// copy's completion flag that a unit waits on.
std::vector<std::string> HandOverRaces(const std::string& program) {
  std::vector<std::string> out;
  std::istringstream in(program.substr(0, program.find(".collective\n")));
  const std::regex handover(R"(\s+signal (vpu|mxu\d|dma), f(\d+), 1)");
  const std::regex seq_wait(R"(\s+wait seq, f(\d+), 1)");
  const std::regex copy(R"(\s+dma\.\w+ .*, f(\d+))");
  const std::regex unit_wait(R"(\s+wait (vpu|dma|mxu\d), f(\d+), \d+)");
  std::vector<std::string> kernel;
  std::string line;
  auto check = [&] {
    std::set<int> copies, unit_waits;
    std::string tag = "?";
    std::smatch m;
    for (const std::string& l : kernel) {
      if (std::regex_match(l, m, copy)) copies.insert(std::stoi(m[1]));
      if (std::regex_match(l, m, unit_wait)) unit_waits.insert(std::stoi(m[2]));
      if (tag == "?" && l.rfind(".tag \"", 0) == 0) tag = l.substr(6, l.size() - 7);
    }
    for (size_t k = 0; k + 1 < kernel.size(); ++k) {
      std::smatch a, b;
      if (!std::regex_match(kernel[k], a, handover) ||
          !std::regex_match(kernel[k + 1], b, seq_wait) || a[2] != b[1])
        continue;
      const int f = std::stoi(b[1]);
      if (f != 30 && copies.count(f) && unit_waits.count(f))
        out.push_back(tag + " f" + std::to_string(f));
    }
    kernel.clear();
  };
  while (std::getline(in, line)) {
    // A kernel ends at its drain barrier's wait, or where the next one's window begins
    // (kernel windows: its barrier lags).
    if (line.rfind("    window ", 0) == 0) check();
    kernel.push_back(line);
    if (line.rfind("    wait seq, f30,", 0) == 0) check();
  }
  check();
  return out;
}

TEST(FlagHandshake, NoKernelSharesItsHandOverFlagWithACopy) {
  int modules = 0;
  for (const char* dir : {"examples/hlo", "examples/jax", "examples/models"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".hlo" || entry.file_size() > 200'000) continue;
      auto c = CompileForBoard(Slurp(entry.path().string()), entry.path().string(), Board());
      if (!c.ok()) continue;  // refused modules (over HBM) have their own tests
      ++modules;
      for (const std::string& race : HandOverRaces(c.value()->lowered.programs.at(0)))
        ADD_FAILURE() << entry.path().string() << ": " << race;
    }
  }
  EXPECT_GE(modules, 25);
}

// The scan itself: the pattern of the tiled kernel before the fix is found.
TEST(FlagHandshake, TheScanFindsTheTiledKernelsOldRace) {
  const std::string kernel =
      ".tag \"t\"\n    dma.vv r1, r2, d0, f8\n    wait dma, f8, 1\n    signal vpu, f8, 1\n"
      "    wait seq, f8, 1\n    signal dma, f30, 1\n    wait seq, f30, 4\n";
  EXPECT_EQ(HandOverRaces(kernel), std::vector<std::string>{"t f8"});
  EXPECT_TRUE(HandOverRaces(".tag \"u\"\n    dma.vv r1, r2, d0, f9\n    wait dma, f9, 1\n"
                            "    signal vpu, f8, 1\n    wait seq, f8, 1\n    wait seq, f30, 4\n")
                  .empty());
}

}  // namespace
}  // namespace tpusim::testing
