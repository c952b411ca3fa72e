#include "sim/timing.h"

namespace tpusim::sim {

int64_t FixedCostCycles(const CoreConfig& c, isa::TimingClass t, bool branch_taken) {
  using T = isa::TimingClass;
  switch (t) {
    case T::kScalarAlu:
      return c.scalar_cycles;
    case T::kScalarBranch:
      return c.scalar_cycles + (branch_taken ? c.branch_penalty_cycles : 0);
    case T::kSync:
      return c.sync_cycles;
    case T::kVpuLoadStore:
      return c.vpu_load_store_cycles;
    case T::kVpuAlu:
      return c.vpu_alu_cycles;
    case T::kVpuTranscendental:
      return c.vpu_transcendental_cycles;
    case T::kVpuCrossLane:
      return c.vpu_cross_lane_cycles;
    case T::kVpuTranspose:
      return c.vpu_transpose_cycles;
    case T::kMxuLoadWeights:
      return c.mxu_weight_load_cycles;
    default:
      return 0;  // DMA and matmul/pop costs depend on operands: see below
  }
}

int64_t PopCycles(const CoreConfig& c, int64_t rows) {
  return (rows + c.mxu_pop_rows_per_cycle - 1) / c.mxu_pop_rows_per_cycle;
}

double DmaAloneFs(const CoreConfig& c, uint64_t bytes, double bytes_per_s) {
  return static_cast<double>(CyclesToFs(c, c.dma_latency_cycles)) + BytesToFs(bytes, bytes_per_s);
}

}  // namespace tpusim::sim
