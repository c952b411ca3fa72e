// VPU throughput on one simulated v3 core, timing only.
// BM_VpuElementwise/N: y = max(x * z + 1, 0) * 0.5 over N f32 values resident in VMEM, a
// generated loop (4 vregs per trip) of vld, vld, vmul, vadd, vmax, vmul, vst per f32[8,128]
// vreg plus one address increment per stream. The sequencer issues one instruction per
// scalar cycle, so this loop is bound by issue, not by the VPU (vpu_busy_pct shows it).
// BM_VpuAluPeak: register-only vmul chains, the VPU's arithmetic peak.
#include <string>

#include "bench/bench_util.h"

namespace tpusim::bench {
namespace {

constexpr int64_t kVregBytes = 4096, kVregElems = kVregBytes / 4;
constexpr int kUnroll = 4;  // vregs per loop trip

std::string ElementwiseProgram(int64_t elems) {
  const int64_t bytes = elems * 4;
  std::string body;
  for (int j = 0; j < kUnroll; ++j) {
    const std::string x = "v" + std::to_string(3 * j), z = "v" + std::to_string(3 * j + 1),
                      y = "v" + std::to_string(3 * j + 2);
    body += "    vld " + x + ", r10\n    vld " + z + ", r11\n    vmul " + y + ", " + x + ", " + z +
            "\n    vadd " + y + ", " + y + ", v30\n    vmax " + y + ", " + y + ", v31\n    vmul " +
            y + ", " + y + ", v29\n    vst " + y + ", r12\n" +
            "    addi r10, r10, 4096\n    addi r11, r11, 4096\n    addi r12, r12, 4096\n";
  }
  return "    vmovi v29, 0.5\n    vmovi v30, 1.0\n    vmovi v31, 0.0\n    li r10, 0\n" +
         ("    li r11, " + std::to_string(bytes) + "\n    li r12, " + std::to_string(2 * bytes) +
          "\n    li r13, " + std::to_string(bytes) + "\nloop:\n") +
         body + "    blt r10, r13, loop\n    halt\n";
}

// `trips` loop trips of 32 independent vmuls on registers.
std::string AluProgram(int64_t trips) {
  std::string body;
  for (int j = 0; j < 32; ++j) body += "    vmul v" + std::to_string(j % 16) + ", v16, v17\n";
  return "    vmovi v16, 1.5\n    vmovi v17, 0.5\n    li r1, 0\n    li r2, " +
         std::to_string(trips) + "\nloop:\n" + body +
         "    addi r1, r1, 1\n    blt r1, r2, loop\n    halt\n";
}

void ReportVpu(benchmark::State& state, const TimedRun& run, double elementwise_ops) {
  state.counters["Gelem_per_s"] = elementwise_ops / (run.report.time_us * 1e-6) / 1e9;
  state.counters["vpu_busy_pct"] = MeanBusyPercent(run.report, "vpu");
  ReportSimulatorSpeed(state, run);
}

void BM_VpuElementwise(benchmark::State& state) {
  const int64_t elems = state.range(0);
  const sim::BoardConfig board = BenchBoard();
  if (static_cast<uint64_t>(3 * elems * 4) > board.core.vmem_bytes)
    return state.SkipWithError("x, z and y do not fit in the configured VMEM");
  for (auto _ : state) {
    TimedRun run;
    if (!RunTimingOnly(state, board, {ElementwiseProgram(elems)}, run)) return;
    ReportVpu(state, run, static_cast<double>(elems));
  }
}
BENCHMARK(BM_VpuElementwise)
    ->RangeMultiplier(4)
    ->Range(kUnroll* kVregElems, 1 << 20)  // x, z and y: 12 MiB of the 16 MiB VMEM at most
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_VpuAluPeak(benchmark::State& state) {
  const int64_t trips = state.range(0);
  const sim::BoardConfig board = BenchBoard();
  for (auto _ : state) {
    TimedRun run;
    if (!RunTimingOnly(state, board, {AluProgram(trips)}, run)) return;
    ReportVpu(state, run, static_cast<double>(trips) * 32 * kVregElems);
  }
}
BENCHMARK(BM_VpuAluPeak)->Arg(2048)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim::bench
