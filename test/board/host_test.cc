// The host: an input pipeline slower than the device makes the device wait (idle time),
// and steps_per_execution divides the dispatch overhead exactly as the dispatch model says.
#include <gmock/gmock.h>

#include <string>

#include "board_test_util.h"
#include "profiler/metrics.h"
#include "profiler/recorder.h"
#include "sim/timing.h"

namespace tpusim::sim {
namespace {

// One step on a core: wait for its infeed batch, then a 4096-row matmul on MXU0.
constexpr const char* kStep =
    "wait seq, f31, 1\nli r1, 0\nli r2, 4096\nmxu.ldw m0, r1\nmxu.mm m0, r1, r2, r1\nhalt\n";
// One step without infeed.
constexpr const char* kStepNoInfeed =
    "li r1, 0\nli r2, 4096\nmxu.ldw m0, r1\nmxu.mm m0, r1, r2, r1\nhalt\n";

struct HostRun {
  BoardConfig board;
  profiler::Recorder recorder{profiler::RecorderOptions{.num_cores = 8, .mxus_per_core = 2}};
  std::unique_ptr<Simulation> sim;
  HostRun(const char* step, const TrainingLoop& loop, const std::string& config = "v3-8")
      : board(LoadConfig(config)) {
    sim = std::make_unique<Simulation>(board, RunOptions{.functional = false, .sink = &recorder});
    auto p = isa::Assemble(step, "step.s");
    for (int c = 0; c < 8; ++c) sim->AddCore(*p);
    sim->SetTrainingLoop(loop);
  }
  profiler::Metrics Metrics() {
    recorder.Finish();
    profiler::HardwarePeaks peaks;
    peaks.flops_per_s_per_core = 2.0 * 2 * 128 * 128 * board.core.clock_hz;
    peaks.hbm_bytes_per_s_per_core = board.core.hbm_bandwidth_bytes_per_s;
    peaks.clock_hz = board.core.clock_hz;
    return profiler::ComputeMetrics(recorder, peaks);
  }
};

TrainingLoop InfeedLoop(double examples_per_s) {
  TrainingLoop loop;
  loop.steps = 12;
  loop.steps_per_execution = 12;
  loop.global_batch = 1024;
  loop.example_bytes = 64;
  loop.input_examples_per_s = examples_per_s;
  return loop;
}

TEST(Host, SlowInputMakesTheDeviceWaitAndShowsAsIdleTime) {
  // A batch every 20 us; a step computes for about 4.5 us.
  HostRun run(kStep, InfeedLoop(1024 / 20e-6));
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const HostReport& h = run.sim->host()->report();
  ASSERT_EQ(h.step_end_fs.size(), 12u);
  // In steady state the device finishes a step per batch: input-bound.
  for (size_t s = 4; s < 12; ++s)
    EXPECT_NEAR(static_cast<double>(h.step_end_fs[s] - h.step_end_fs[s - 1]), 20e9, 0.005 * 20e9);
  // The waits show as idle time: busy is 12 steps of compute (weight load and the
  // 4096-row stream) over the whole run, the host's dispatch included.
  profiler::Metrics m = run.Metrics();
  double span_fs = static_cast<double>(h.step_end_fs[11]);
  double busy_fs = 12.0 * CyclesToFs(run.board.core, run.board.core.mxu_weight_load_cycles + 4096);
  EXPECT_NEAR(m.device_idle_time_percent, 100 * (1 - busy_fs / span_fs), 1.0);
  EXPECT_GT(m.device_idle_time_percent, 70.0);
  // ... and in the step-time breakdown the steps wait for infeed longer than they compute.
  EXPECT_GT(m.step_breakdown.infeed_ms, 2 * m.step_breakdown.compute_ms);
}

TEST(Host, FastInputLeavesTheDeviceComputeBound) {
  HostRun run(kStep, InfeedLoop(0));  // unbounded input pipeline
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const HostReport& h = run.sim->host()->report();
  double step_fs = static_cast<double>(h.step_end_fs[11] - h.step_end_fs[10]);
  EXPECT_LT(step_fs, 6e9);  // about the 4.5 us of compute, not the 20 us of input
  profiler::Metrics m = run.Metrics();
  // Only the first batch (PCIe start-up) is waited for.
  EXPECT_LT(m.step_breakdown.infeed_ms, 0.25 * m.step_breakdown.step_ms);
}

// Host time per step = dispatch overhead / K. With no infeed the run is exactly
// ceil(N / K) x (dispatch overhead + launch latency) + N x the step's compute time.
void CheckDispatchModel(int k) {
  TrainingLoop loop;
  loop.steps = 50;
  loop.steps_per_execution = k;
  HostRun run(kStepNoInfeed, loop);
  RunReport r = run.sim->Run();
  ASSERT_TRUE(r.ok) << r.error;
  const HostReport& h = run.sim->host()->report();
  const HostConfig& host = run.board.host;
  const int dispatches = (50 + k - 1) / k;
  EXPECT_EQ(h.dispatches, dispatches);
  EXPECT_DOUBLE_EQ(static_cast<double>(h.dispatch_overhead_fs),
                   Host::PredictedDispatchOverheadFs(run.board, loop));
  EXPECT_NEAR(static_cast<double>(h.dispatch_overhead_fs) / 50,
              host.dispatch_overhead_us * 1e9 * dispatches / 50, 1);
  // Step: two li, then the weight load and the 4096-row stream.
  const int64_t step_cycles = 2 + run.board.core.mxu_weight_load_cycles + 4096;
  double expect = dispatches * (host.dispatch_overhead_us + host.launch_latency_us) * 1e9 +
                  50.0 * CyclesToFs(run.board.core, step_cycles);
  EXPECT_NEAR(static_cast<double>(r.end_fs), expect, 50 * 2.0);
}

TEST(Host, OneStepPerDispatchPaysTheOverheadEveryStep) { CheckDispatchModel(1); }
TEST(Host, TenStepsPerDispatchPayATenth) { CheckDispatchModel(10); }
TEST(Host, FiftyStepsPerDispatchPayOnce) { CheckDispatchModel(50); }

TEST(Host, TpuNodeDispatchCostsMoreThanTpuVm) {
  for (const char* board : {"v3-8", "v2-8"}) {
    BoardConfig vm = LoadConfig(board), node = LoadConfig(std::string(board) + "-node");
    EXPECT_GT(node.host.dispatch_overhead_us, 10 * vm.host.dispatch_overhead_us) << board;
    EXPECT_GT(node.host.launch_latency_us, vm.host.launch_latency_us) << board;
    // The attachment is all that differs.
    EXPECT_EQ(node.core.clock_hz, vm.core.clock_hz) << board;
    EXPECT_EQ(node.core.mxus, vm.core.mxus) << board;
    EXPECT_EQ(node.core.hbm_bytes, vm.core.hbm_bytes) << board;
  }
}

}  // namespace
}  // namespace tpusim::sim
