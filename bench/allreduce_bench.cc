// All-reduce on the simulated board (v3-8 unless tpusim bench --config): bus bandwidth against size
// for the ring, both ways round, and the butterfly of short arrays
// (the NCCL-style figure, 2(n-1)/n x bytes / time), and the simulator's own speed running it. One
// simulation per process: scripts/bench.sh runs each size separately.
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench/bench_util.h"
#include "compiler/collectives/butterfly_allreduce.h"
#include "compiler/collectives/ring_allreduce.h"
#include "isa/assembler.h"
#include "sim/simulation.h"

namespace tpusim::bench {
namespace {

enum class Algorithm { kRing, kBidirectional, kButterfly };

void RunAllReduce(benchmark::State& state, Algorithm algorithm) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  sim::BoardConfig board = BenchBoard();
  collectives::RingAllReduceSpec spec;
  spec.ring = collectives::TorusRing(board.ici.torus_x, board.ici.torus_y, board.cores_per_chip);
  spec.bytes = bytes;
  spec.bidirectional = algorithm == Algorithm::kBidirectional;
  const int n = static_cast<int>(spec.ring.size());
  std::vector<isa::Program> programs(n);
  for (int p = 0; p < n; ++p) {
    auto prog = isa::Assemble(algorithm == Algorithm::kButterfly
                                  ? collectives::ButterflyAllReduceProgram(spec, p)
                                  : collectives::RingAllReduceProgram(spec, p),
                              "allreduce.s");
    if (!prog.ok()) return state.SkipWithError(prog.error().message.c_str());
    programs[spec.ring[p]] = std::move(prog.value());
  }
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    sim::Simulation simulation(board, {.functional = false});
    for (const isa::Program& p : programs) simulation.AddCore(p);
    sim::RunReport r = simulation.Run();
    double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok) return state.SkipWithError(r.error.c_str());
    double sim_s = r.time_us * 1e-6;
    state.counters["sim_time_us"] = r.time_us;
    state.counters["algbw_GBps"] = bytes / sim_s / 1e9;
    state.counters["busbw_GBps"] = 2.0 * (n - 1) / n * bytes / sim_s / 1e9;
    state.counters["sim_cycles_per_host_s"] = r.cycles / host_s;
  }
}
void BM_AllReduceBusBandwidth(benchmark::State& state) { RunAllReduce(state, Algorithm::kRing); }
void BM_AllReduceBidirectional(benchmark::State& state) {
  RunAllReduce(state, Algorithm::kBidirectional);
}
// Short arrays by recursive doubling (the compiler's choice up to kButterflyMaxBytes): its
// time against the ring's at 32 and 64 KiB shows the crossover.
void BM_AllReduceButterfly(benchmark::State& state) { RunAllReduce(state, Algorithm::kButterfly); }

BENCHMARK(BM_AllReduceBusBandwidth)
    ->RangeMultiplier(4)
    ->Range(32 << 10, 256 << 20)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduceButterfly)
    ->RangeMultiplier(4)
    ->Range(4 << 10, 256 << 10)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduceBidirectional)
    ->RangeMultiplier(4)
    ->Range(64 << 10, 4 << 20)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::bench
