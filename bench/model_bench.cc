// Per-model benchmarks: every shipped model (and the dot example) compiled for v3-8 and
// two training steps in one dispatch simulated timing-only with the profiler attached, as
// `tpusim run --timing --steps 2 --steps-per-execution 2` runs them. Simulated figures: the
// steady-state step time (the second step, whose infeed overlapped the first, as the
// measured step times of docs/fidelity.md are), the first step's, examples/s, MXU %. The
// simulator's own cost: compile time, host seconds per simulated step, simulated
// instructions per host second. Always v3-8 (the models are sized for it).
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "bench/read_module.h"
#include "compiler/compile.h"
#include "driver/board_target.h"
#include "isa/assembler.h"
#include "profiler/metrics.h"
#include "profiler/recorder.h"
#include "sim/simulation.h"

namespace tpusim::bench {
namespace {

// CPU time this process has used, in seconds: unlike wall time, it does not count the
// time other processes on a shared machine take from this one.
double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

constexpr int kSteps = 2;  // in one dispatch: the second is the steady state

// Compiles the module at `path`, then simulates kSteps steps. Host time counts building the
// simulation, running it and the profiler's aggregation, not compiling or assembling.
void BM_Model(benchmark::State& state, const std::string& path) {
  const std::string text = ReadModule(path);
  if (text.empty()) return state.SkipWithError(("cannot read " + path).c_str());
  const sim::BoardConfig board = sim::LoadConfig("v3-8");
  for (auto _ : state) {
    auto compiled_or = CompileForBoard(text, path, driver::TargetFor(board));
    if (!compiled_or.ok()) return state.SkipWithError(compiled_or.status().message().c_str());
    const CompiledModule& compiled = *compiled_or.value();
    const lowering::LoweredModule& low = compiled.lowered;
    std::vector<isa::Program> programs;
    try {
      programs = driver::AssembleCores(low, path);
    } catch (const std::runtime_error& e) {
      return state.SkipWithError(e.what());
    }
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ProcessCpuSeconds();
    profiler::Recorder recorder(profiler::RecorderOptions{.num_cores = board.cores(),
                                                          .mxus_per_core = board.core.mxus,
                                                          .sample_interval_fs = 1'000'000'000});
    sim::Simulation simulation(board, {.functional = false, .sink = &recorder, .unit_busy = false});
    for (int c = 0; c < board.cores(); ++c) {
      recorder.SetTags(c, programs[c].tags);
      simulation.AddCore(programs[c]);
    }
    simulation.SetTrainingLoop(driver::TrainingLoopFor(low, board, kSteps, kSteps));
    const sim::RunReport r = simulation.Run();
    recorder.Finish();
    const double host_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kSteps;
    const double host_cpu_s = (ProcessCpuSeconds() - cpu_start) / kSteps;
    if (!r.ok) return state.SkipWithError(r.error.c_str());
    const profiler::Metrics m = profiler::ComputeMetrics(recorder, driver::PeaksOf(board));
    // The first step waits for its own infeed; later ones found theirs done.
    const double step_s = m.step_time_ms.min * 1e-3;
    state.counters["step_time_ms"] = m.step_time_ms.min;
    state.counters["first_step_ms"] = m.step_time_ms.max;
    state.counters["examples_per_s"] = step_s > 0 ? low.global_batch / step_s : 0;
    state.counters["mxu_pct"] = m.mxu_utilization_percent;
    state.counters["global_batch"] = static_cast<double>(low.global_batch);
    state.counters["sim_time_us"] = r.time_us;
    state.counters["host_s_per_sim_step"] = host_s;
    state.counters["host_cpu_s_per_sim_step"] = host_cpu_s;
    state.counters["compile_ms"] = compiled.compile_ms;
    state.counters["sim_instr_per_host_s"] = ExecutedInstructions(r) / (host_s * kSteps);
  }
}

// Name (after "BM_Model/") and module path, from the repository root.
const std::vector<std::pair<std::string, std::string>> kModels = {
    {"mnist-cnn", "examples/models/mnist-cnn.hlo"},
    {"mlp", "examples/models/mlp.hlo"},
    {"transformer-layer", "examples/models/transformer-layer.hlo"},
    {"bert-base", "examples/models/bert-base.hlo"},
    {"resnet50", "examples/models/resnet50.hlo"},
    {"resnet50-bf16", "examples/models/resnet50-bf16.hlo"},  // docs/fidelity.md's
    {"dot_bf16", "examples/hlo/dot_bf16.hlo"},
};

const bool kRegistered = [] {
  for (const auto& [name, path] : kModels)
    benchmark::RegisterBenchmark(("BM_Model/" + name).c_str(), BM_Model, path)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
}  // namespace tpusim::bench
