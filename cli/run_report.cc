#include "cli/run_report.h"

#include <cstdio>
#include <map>

namespace tpusim::cli {

void PrintResult(const RunShape& run, const sim::BoardConfig& board, const CompiledModule& compiled,
                 const sim::RunReport& r, const profiler::Report& report) {
  const lowering::LoweredModule& low = compiled.lowered;
  const profiler::Metrics& m = report.metrics;
  const profiler::StepBreakdown& b = m.step_breakdown;
  std::printf("%s on %s (%d cores)\n", run.module_path.c_str(), board.name.c_str(), board.cores());
  if (low.data_parallel)
    std::printf("data parallel: global batch %lld split over %d cores (%lld per core)\n",
                static_cast<long long>(low.global_batch), board.cores(),
                static_cast<long long>(low.batch_per_core));
  else if (low.replicas > 1)
    std::printf("%d replicas, one per core, batch %lld per core\n", low.replicas,
                static_cast<long long>(low.batch_per_core));
  std::map<lowering::KernelKind, int> kinds;
  int approximate = 0;
  for (const lowering::LoweredOp& op : low.ops) {
    ++kinds[op.kind];
    approximate += !op.note.empty();
  }
  std::printf(
      "kernels: %d MXU, %d VPU, %d DMA, %d collective (%d with notes: tpusim compile --emit isa)\n",
      kinds[lowering::KernelKind::kMxu], kinds[lowering::KernelKind::kVpu],
      kinds[lowering::KernelKind::kDma], kinds[lowering::KernelKind::kCollective], approximate);
  std::printf("steps: %d (%d per execution)   simulated time: %.3f ms\n", run.steps,
              run.steps_per_execution, r.time_us / 1e3);
  const double examples_per_s =
      r.time_us > 0 ? run.steps * static_cast<double>(low.global_batch) / (r.time_us * 1e-6) : 0;
  std::printf("step time: %.4f ms (avg), %.4f ms (min), %.4f ms (max)   %.0f examples/s\n",
              m.step_time_ms.avg, m.step_time_ms.min, m.step_time_ms.max, examples_per_s);
  const double tflops = m.step_time_ms.avg > 0 ? low.flops_per_step_per_core * board.cores() /
                                                     (m.step_time_ms.avg * 1e-3) / 1e12
                                               : 0;
  std::printf("MXU: %.1f%%   idle: %.1f%%   %.1f TFLOP/s   HBM peak per core: %.1f MiB\n",
              m.mxu_utilization_percent, m.device_idle_time_percent, tflops,
              compiled.report.peak_hbm_bytes / 1048576.0);
  std::printf(
      "step breakdown (ms): compute %.4f, infeed %.4f, all-reduce %.4f, outfeed %.4f, "
      "host overhead %.4f\n",
      b.compute_ms, b.infeed_ms, b.all_reduce_ms, b.outfeed_ms, b.host_overhead_ms);
}

}  // namespace tpusim::cli
