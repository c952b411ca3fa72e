// The progress callback of Simulation::Run() slices the run without changing it: a
// training loop on every core gives the same RunReport and step ends with and without the
// callback. SystemC runs one simulation per process, so each test runs one variant and
// compares it with the same golden text.
#include <gmock/gmock.h>

#include <sstream>

#include "board_test_util.h"

namespace tpusim::sim {
namespace {

// One step: wait for the infeed batch, a weight load and a 512-row matmul on MXU0.
constexpr const char* kStep =
    "wait seq, f31, 1\nli r1, 0\nli r2, 512\nmxu.ldw m0, r1\nmxu.mm m0, r1, r2, r1\nhalt\n";
constexpr int kSteps = 6;

// Every figure of the report (host_events included) and the host's step ends, as text.
std::string Describe(const RunReport& r, const HostReport& host) {
  std::ostringstream out;
  out << "ok=" << r.ok << " error=" << r.error << " end_fs=" << r.end_fs << " cycles=" << r.cycles
      << " time_us=" << r.time_us << " host_events=" << r.host_events << "\n";
  for (size_t c = 0; c < r.cores.size(); ++c) {
    out << "core" << c << ":";
    for (const UnitReport& u : r.cores[c])
      out << " " << u.name << "/" << u.busy_fs << "/" << u.instructions << "/" << u.busy_percent;
    out << "\n";
  }
  out << "steps:";
  for (TimeFs t : host.step_end_fs) out << " " << t;
  return out.str();
}

// The training loop run on all 8 cores of v3-8 with `options`.
std::string RunLoop(RunOptions options) {
  BoardConfig board = LoadConfig("v3-8");
  Simulation sim(board, std::move(options));
  auto program = isa::Assemble(kStep, "step.s");
  EXPECT_TRUE(program.ok());
  for (int c = 0; c < board.cores(); ++c) sim.AddCore(*program);
  TrainingLoop loop;
  loop.steps = kSteps;
  loop.steps_per_execution = 2;
  loop.global_batch = 1024;
  loop.example_bytes = 256;
  loop.input_examples_per_s = 1024 / 2e-6;  // a batch every 2 us
  sim.SetTrainingLoop(loop);
  RunReport r = sim.Run();
  return Describe(r, sim.host()->report());
}

const std::string kGolden =
    "ok=1 error= end_fs=484104255324 cycles=455058 time_us=484.104 host_events=58\n"
    "core0: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core1: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core2: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core3: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core4: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core5: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core6: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "core7: seq/31914900/12/0.00659257 dma/0/0/0 mxu0/3268085106/6/0.675079 mxu1/0/0/0 vpu/0/0/0\n"
    "steps: 160684042554 161368085108 322052127662 322736170216 483420212770 484104255324";

TEST(RunProgress, RunWithoutCallbackMatchesTheGolden) {
  EXPECT_EQ(RunLoop(RunOptions{.functional = false}), kGolden);
}

TEST(RunProgress, SlicedRunMatchesTheSameGoldenAndReportsEachSlice) {
  std::vector<RunProgress> seen;
  RunOptions options{.functional = false};
  options.on_progress = [&](const RunProgress& p) { seen.push_back(p); };
  options.progress_interval_fs = 1'000'000'000;  // 1 simulated microsecond
  EXPECT_EQ(RunLoop(std::move(options)), kGolden);
  ASSERT_GT(seen.size(), 5u);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].simulated_fs, seen[i - 1].simulated_fs);
    EXPECT_GE(seen[i].steps_done, seen[i - 1].steps_done);
  }
  EXPECT_EQ(seen.back().simulated_fs, 484104255324u);
  EXPECT_EQ(seen.back().steps_done, kSteps);
  EXPECT_LT(seen[seen.size() / 2].steps_done, kSteps);
}

// One core runs `source` in slices of 1 simulated microsecond; counts the callbacks.
RunReport RunSliced(const std::string& source, int& calls) {
  RunOptions options{.functional = false};
  options.on_progress = [&calls](const RunProgress&) { ++calls; };
  options.progress_interval_fs = 1'000'000'000;
  Simulation sim(LoadConfig("v3-8"), std::move(options));
  auto program = isa::Assemble(source, "core0.s");
  EXPECT_TRUE(program.ok());
  sim.AddCore(*program);
  return sim.Run();
}

TEST(RunProgress, SlicedRunEndsAtADeadlock) {
  int calls = 0;
  RunReport r = RunSliced("wait mxu0, f5, 1\nli r1, 0\nmxu.ldw m0, r1\nhalt\n", calls);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("deadlock"));
  EXPECT_GE(calls, 1);
}

TEST(RunProgress, SlicedRunEndsAtAnError) {
  int calls = 0;
  RunReport r = RunSliced("li r1, 100\nvld v0, r1\nhalt\n", calls);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, ::testing::HasSubstr("not 256-byte aligned"));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tpusim::sim
