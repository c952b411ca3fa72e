// Simulator speed: how fast tpusim simulates a bf16 matmul on one v3 core, timing-only
// and with values. SystemC elaborates once per process, so each benchmark runs one
// simulation (Iterations(1)) and scripts/bench.sh runs each in its own process.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <random>

#include "compiler/lowering/dot/matmul_kernel.h"
#include "isa/assembler.h"
#include "isa/bf16.h"
#include "profiler/recorder.h"
#include "sim/simulation.h"

namespace tpusim::bench {
namespace {

void Report(benchmark::State& state, const sim::RunReport& r, uint64_t instructions,
            double host_s) {
  double busy = 0;
  for (const sim::UnitReport& u : r.units)
    if (u.name == "mxu0" || u.name == "mxu1") busy += u.busy_percent / 2;
  state.counters["sim_cycles"] = static_cast<double>(r.cycles);
  state.counters["sim_time_us"] = r.time_us;
  state.counters["mxu_busy_pct"] = busy;
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["sim_instr_per_host_s"] = instructions / host_s;
  state.counters["sim_cycles_per_host_s"] = r.cycles / host_s;
  state.counters["host_s_per_sim_s"] = host_s / (r.time_us * 1e-6);
}

uint64_t ExecutedInstructions(const sim::RunReport& r) {
  uint64_t n = 0;
  for (const sim::UnitReport& u : r.units) n += u.instructions;
  return n;
}

// With profiling on (a Recorder as the activity sink) when `profiled`.
void MatmulTimingOnly(benchmark::State& state, bool profiled) {
  const int64_t n = state.range(0);
  auto program = isa::Assemble(lowering::MatmulKernel(n), "matmul.s");
  if (!program.ok()) return state.SkipWithError(program.error().message.c_str());
  sim::RunReport r;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    profiler::Recorder recorder(profiler::RecorderOptions{.num_cores = 1});
    sim::Simulation simulation(sim::LoadConfig("v3-8"),
                               {.functional = false, .sink = profiled ? &recorder : nullptr});
    simulation.AddCore(*program);
    r = simulation.Run();
    if (profiled) recorder.Finish();
    double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok) return state.SkipWithError(r.error.c_str());
    Report(state, r, ExecutedInstructions(r), host_s);
  }
}
void BM_MatmulTimingOnly(benchmark::State& state) { MatmulTimingOnly(state, false); }
void BM_MatmulTimingOnlyProfiled(benchmark::State& state) { MatmulTimingOnly(state, true); }
BENCHMARK(BM_MatmulTimingOnlyProfiled)->Arg(8192)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulTimingOnly)->Arg(8192)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_MatmulWithValues(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto program = isa::Assemble(lowering::MatmulKernel(n), "matmul.s");
  if (!program.ok()) return state.SkipWithError(program.error().message.c_str());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<uint16_t> a(n * n), b(n * n);
  for (auto& x : a) x = isa::F32ToBf16(dist(rng));
  for (auto& x : b) x = isa::F32ToBf16(dist(rng));
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    sim::Simulation simulation(sim::LoadConfig("v3-8"), {.functional = true});
    sim::TensorCore& core = simulation.AddCore(*program);
    core.hbm().Write(0, a.data(), a.size() * 2);
    core.hbm().Write(n * n * 2, b.data(), b.size() * 2);
    sim::RunReport r = simulation.Run();
    double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok) return state.SkipWithError(r.error.c_str());
    Report(state, r, ExecutedInstructions(r), host_s);
    state.PauseTiming();
    // Spot-check values against a host reference (bf16 products, f32 accumulate).
    for (int64_t i = 0; i < n; i += n / 8 + 3) {
      for (int64_t j = 0; j < n; j += n / 8 + 5) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < n; ++k) {
          double p = double(isa::Bf16ToF32(a[i * n + k])) * isa::Bf16ToF32(b[k * n + j]);
          ref += p, mag += std::fabs(p);
        }
        float got;
        core.hbm().Read(2 * n * n * 2 + (i * n + j) * 4, &got, 4);
        if (std::fabs(got - ref) > 1e-5 * mag + 1e-6)
          return state.SkipWithError("matmul result differs from the host reference");
      }
    }
    state.ResumeTiming();
  }
}
BENCHMARK(BM_MatmulWithValues)->Arg(2048)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::bench
