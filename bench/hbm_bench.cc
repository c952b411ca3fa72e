// HBM bandwidth on one simulated v3 core against the transfer size, timing only: one DMA
// copy (dma.hh: HBM -> HBM; dma.hv: HBM -> VMEM) of the given bytes, from issue to
// completion, so small copies show the DMA latency and large ones the HBM path.
// copy_GBps is bytes copied per second; hbm_pct is the HBM traffic (dma.hh reads and
// writes HBM, twice the bytes) over the configured HBM bandwidth.
#include <algorithm>

#include "bench/bench_util.h"

namespace tpusim::bench {
namespace {

constexpr int64_t kMaxRowBytes = 1 << 20;  // descriptor rows of at most 1 MiB, contiguous

std::string CopyProgram(const char* mnemonic, int64_t bytes, int64_t src, int64_t dst) {
  const int64_t row_bytes = std::min(bytes, kMaxRowBytes);
  const std::string row = std::to_string(row_bytes);
  return ".desc block rows=" + std::to_string(bytes / row_bytes) + " row_bytes=" + row +
         " src_stride=" + row + " dst_stride=" + row + "\n    li r1, " + std::to_string(dst) +
         "\n    li r2, " + std::to_string(src) + "\n    " + mnemonic +
         " r1, r2, block, f0\n    halt\n";
}

// hbm_passes: how many times each byte crosses the HBM port (2 for dma.hh, 1 for dma.hv).
void RunCopy(benchmark::State& state, const char* mnemonic, int64_t dst, int hbm_passes) {
  const int64_t bytes = state.range(0);
  const sim::BoardConfig board = BenchBoard();
  for (auto _ : state) {
    TimedRun run;
    if (!RunTimingOnly(state, board, {CopyProgram(mnemonic, bytes, 0, dst)}, run)) return;
    const double sim_s = run.report.time_us * 1e-6;
    state.counters["bytes"] = static_cast<double>(bytes);
    state.counters["copy_GBps"] = bytes / sim_s / 1e9;
    state.counters["hbm_pct"] =
        100.0 * hbm_passes * bytes / sim_s / board.core.hbm_bandwidth_bytes_per_s;
    ReportSimulatorSpeed(state, run);
  }
}

void BM_HbmToHbmCopy(benchmark::State& state) {
  RunCopy(state, "dma.hh", state.range(0), 2);  // destination right after the source
}
BENCHMARK(BM_HbmToHbmCopy)
    ->RangeMultiplier(4)
    ->Range(4 << 10, 256 << 20)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Sizes up to the 16 MiB VMEM of a v3 core; a config with less VMEM fails the larger ones.
void BM_HbmToVmemCopy(benchmark::State& state) {
  if (static_cast<uint64_t>(state.range(0)) > BenchBoard().core.vmem_bytes)
    return state.SkipWithError("the copy does not fit in the configured VMEM");
  RunCopy(state, "dma.hv", 0, 1);
}
BENCHMARK(BM_HbmToVmemCopy)
    ->RangeMultiplier(4)
    ->Range(4 << 10, 16 << 20)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::bench
