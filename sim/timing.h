// The timing formulas of docs/isa.md (section Timing), as pure functions of the
// configuration. Units call these; tests check each one exactly.
#pragma once

#include <cstdint>

#include "isa/isa.h"
#include "sim/config.h"

namespace tpusim::sim {

// Busy cycles of a scalar, sync or VPU instruction (classes with a fixed cost).
int64_t FixedCostCycles(const CoreConfig& c, isa::TimingClass t, bool branch_taken = false);

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

inline uint64_t CyclesToFs(const CoreConfig& c, int64_t cycles) {
  return static_cast<uint64_t>(static_cast<double>(cycles) * c.cycle_fs() + 0.5);
}
inline double BytesToFs(uint64_t bytes, double bytes_per_s) {
  return static_cast<double>(bytes) * 1e15 / bytes_per_s;
}

}  // namespace tpusim::sim
