// Matmul on the simulated v3-8, timing only: TFLOP/s and MXU % against the square size
// (one core) and against the batch per core (every core of the board runs its rows of a
// data-parallel [cores*M, K] x [K, N] dot: the curve behind "batch 128 per core").
//
// MXU % is useful FLOPs over peak (rows x cols multiply-adds per MXU per cycle): the
// figure the TPU profiler reports. The kernel tiles M in multiples of 8 (the sublanes of
// an f32[8,128] tile, the granule XLA pads a TPU batch to), so batches below 8 rows are
// padded to 8: the MXU streams the padded rows (mxu_busy_pct counts them, one row per
// cycle) while mxu_pct counts only the useful ones.
#include <algorithm>

#include "bench/bench_util.h"
#include "compiler/lowering/dot/matmul_kernel.h"
#include "driver/board_target.h"

namespace tpusim::bench {
namespace {

constexpr int64_t kBatchCurveK = 4096, kBatchCurveN = 4096;
constexpr int64_t kKernelRowGranule = 8;

std::string Kernel(int64_t m, int64_t k, int64_t n, int mxus) {
  lowering::MatmulShape shape;
  shape.m = m, shape.k = k, shape.n = n;
  shape.a = 0, shape.b = static_cast<uint64_t>(m * k * 2), shape.c = shape.b + k * n * 2;
  shape.tag = "matmul", shape.mxus = mxus;
  return lowering::MatmulKernel(shape);
}

// useful_flops: over the whole run (all cores); cores: how many ran.
void ReportMatmul(benchmark::State& state, const sim::BoardConfig& board, const TimedRun& run,
                  double useful_flops, int cores) {
  const double sim_s = run.report.time_us * 1e-6;
  const double tflops = useful_flops / sim_s / 1e12;
  state.counters["tflops"] = tflops;
  state.counters["mxu_pct"] =
      100.0 * tflops * 1e12 / (driver::PeakFlopsPerCore(board.core) * cores);
  state.counters["mxu_busy_pct"] = MeanBusyPercent(run.report, "mxu");
  ReportSimulatorSpeed(state, run);
}

// C[N,N] = A[N,N] x B[N,N] on core 0 with both MXUs.
void BM_MatmulSquare(benchmark::State& state) {
  const int64_t n = state.range(0);
  const sim::BoardConfig board = BenchBoard();
  for (auto _ : state) {
    TimedRun run;
    if (!RunTimingOnly(state, board, {Kernel(n, n, n, board.core.mxus)}, run)) return;
    ReportMatmul(state, board, run, 2.0 * n * n * n, 1);
  }
}
BENCHMARK(BM_MatmulSquare)
    ->RangeMultiplier(2)
    ->Range(256, 8192)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Every core: C[M,N] = A[M,K] x B[K,N] with its own M rows (M = the batch per core).
void BM_MatmulBatchPerCore(benchmark::State& state) {
  const int64_t m = state.range(0);
  const int64_t padded = std::max(m, kKernelRowGranule);
  const sim::BoardConfig board = BenchBoard();
  const int cores = board.cores();
  const std::vector<std::string> programs(
      cores, Kernel(padded, kBatchCurveK, kBatchCurveN, board.core.mxus));
  for (auto _ : state) {
    TimedRun run;
    if (!RunTimingOnly(state, board, programs, run)) return;
    ReportMatmul(state, board, run, 2.0 * cores * m * kBatchCurveK * kBatchCurveN, cores);
    state.counters["padded_rows"] = static_cast<double>(padded - m);
  }
}
BENCHMARK(BM_MatmulBatchPerCore)
    ->RangeMultiplier(2)
    ->Range(1, 1024)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::bench
