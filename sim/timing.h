// The timing formulas of docs/isa.md (section Timing), as pure functions of the
// configuration. Units call these; tests check each one exactly.
#pragma once

#include <algorithm>
#include <cstdint>

#include "isa/isa.h"
#include "sim/config.h"

namespace tpusim::sim {

// Busy cycles of a scalar, sync or VPU instruction (classes with a fixed cost).
inline int64_t FixedCostCycles(const CoreConfig& c, isa::TimingClass t, bool branch_taken = false) {
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

// VPU: cycles of one vloop trip whose body costs `load_store` cycles of loads and stores and
// `other` cycles of everything else (ALU, transcendental, cross-lane, transpose). A software-
// pipelined loop on the VLIW core issues each trip in as many bundles as its busiest slot
// class needs: max(ceil(load_store / load-store slots), ceil(other / ALU slots)).
inline int64_t VloopTripCycles(const CoreConfig& c, int64_t load_store, int64_t other) {
  const int64_t ls = c.vpu_load_store_slots, alu = c.vpu_alu_slots;
  return std::max((load_store + ls - 1) / ls, (other + alu - 1) / alu);
}

// MXU: cycles the array is occupied streaming `rows` LHS rows (one per cycle).
inline int64_t MatmulStreamCycles(int64_t rows) { return rows; }
// Cycles from a matmul's first row entering to its last result in the accumulators.
inline int64_t MatmulLatencyCycles(const CoreConfig& c, int64_t rows) {
  return rows + c.mxu_fill_drain_cycles();
}
int64_t PopCycles(const CoreConfig& c, int64_t rows);
inline int64_t WeightLoadCycles(const CoreConfig& c) { return c.mxu_weight_load_cycles; }

// DMA: time of a copy of `bytes` alone on a path of `bytes_per_s` (no contention),
// in femtoseconds: latency plus transfer. dma.hh/dma.vv pass twice the bytes.
double DmaAloneFs(const CoreConfig& c, uint64_t bytes, double bytes_per_s);

// Cycles to femtoseconds, rounded to nearest; cycle_fs is CoreConfig::cycle_fs().
inline uint64_t CyclesToFs(double cycle_fs, int64_t cycles) {
  return static_cast<uint64_t>(static_cast<double>(cycles) * cycle_fs + 0.5);
}
inline uint64_t CyclesToFs(const CoreConfig& c, int64_t cycles) {
  return CyclesToFs(c.cycle_fs(), cycles);
}
inline double BytesToFs(uint64_t bytes, double bytes_per_s) {
  return static_cast<double>(bytes) * 1e15 / bytes_per_s;
}

}  // namespace tpusim::sim
