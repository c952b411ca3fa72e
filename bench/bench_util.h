// Shared by the simulated-hardware benchmarks: run one simulation (timing only) and report
// simulated figures as Google Benchmark counters. Host time is never the result; the
// simulator's own speed is reported next to it (sim_instr_per_host_s, host_s_per_sim_s).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "isa/assembler.h"
#include "sim/simulation.h"

namespace tpusim::bench {

// The board the suite simulates: TPUSIM_BENCH_CONFIG (a preset or a JSON file, set by
// `tpusim bench --config`), else v3-8.
inline sim::BoardConfig BenchBoard() {
  const char* config = std::getenv("TPUSIM_BENCH_CONFIG");
  return sim::LoadConfig(config && *config ? config : "v3-8");
}

// Instructions executed on every core (DMA, MXU, VPU instructions and runs of scalar work).
inline uint64_t ExecutedInstructions(const sim::RunReport& r) {
  uint64_t n = 0;
  for (const auto& core : r.cores)
    for (const sim::UnitReport& u : core) n += u.instructions;
  return n;
}

// Mean busy % of the units of core 0 whose name starts with `prefix` ("mxu", "vpu", "dma").
inline double MeanBusyPercent(const sim::RunReport& r, const std::string& prefix) {
  double sum = 0;
  int n = 0;
  for (const sim::UnitReport& u : r.units)
    if (u.name.rfind(prefix, 0) == 0) sum += u.busy_percent, ++n;
  return n ? sum / n : 0;
}

struct TimedRun {
  sim::RunReport report;
  double host_s = 0;
};

// Assembles `sources` (one program per core, cores 0..n-1) and runs them timing only on
// `board`. On an assembly or simulation error, marks the benchmark failed and returns
// false.
inline bool RunTimingOnly(benchmark::State& state, const sim::BoardConfig& board,
                          const std::vector<std::string>& sources, TimedRun& out) {
  std::vector<isa::Program> programs;
  for (const std::string& src : sources) {
    auto program = isa::Assemble(src, "bench.s");
    if (!program.ok()) {
      state.SkipWithError(program.error().message.c_str());
      return false;
    }
    programs.push_back(std::move(program.value()));
  }
  auto t0 = std::chrono::steady_clock::now();
  sim::Simulation simulation(board, {.functional = false});
  for (const isa::Program& p : programs) simulation.AddCore(p);
  out.report = simulation.Run();
  out.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!out.report.ok) {
    state.SkipWithError(out.report.error.c_str());
    return false;
  }
  return true;
}

// Simulated time and the simulator's speed on that run.
inline void ReportSimulatorSpeed(benchmark::State& state, const TimedRun& run) {
  const double sim_s = run.report.time_us * 1e-6;
  state.counters["sim_time_us"] = run.report.time_us;
  state.counters["sim_instr_per_host_s"] = ExecutedInstructions(run.report) / run.host_s;
  state.counters["host_s_per_sim_s"] = sim_s > 0 ? run.host_s / sim_s : 0;
}

}  // namespace tpusim::bench
