// Helpers to build hand-made record streams for profiler and traces tests.
#pragma once

#include "profiler/metrics.h"
#include "profiler/recorder.h"

namespace tpusim::profiler::testing {

inline constexpr TimeFs kUs = 1'000'000'000;  // femtoseconds per microsecond

inline sim::BusyRecord Busy(int core, isa::Unit unit, double start_us, double end_us,
                            uint16_t tag = 0, uint32_t step = 0, double flops = 0,
                            uint64_t bytes = 0, isa::Opcode op = isa::Opcode::kNop) {
  sim::BusyRecord r;
  r.core = static_cast<uint16_t>(core);
  r.unit = unit;
  r.start = static_cast<TimeFs>(start_us * kUs);
  r.end = static_cast<TimeFs>(end_us * kUs);
  r.tag = tag;
  r.step = step;
  r.flops = flops;
  r.bytes = bytes;
  // A record on an MXU is a matmul unless the test says otherwise.
  bool mxu = unit >= isa::Unit::kMxu0 && unit <= isa::Unit::kMxu3;
  r.op = (mxu && op == isa::Opcode::kNop) ? isa::Opcode::kMxuMm : op;
  return r;
}

// Round peaks: 1e6 FLOP and 1e5 HBM bytes per microsecond per core (ridge 10 FLOP/byte).
inline HardwarePeaks TestPeaks() {
  HardwarePeaks p;
  p.flops_per_s_per_core = 1e12;
  p.hbm_bytes_per_s_per_core = 1e11;
  p.mxus_per_core = 2;
  p.hbm_capacity_bytes_per_core = 16ull << 30;
  return p;
}

inline sim::StepRecord Step(int core, uint32_t step, double start_us, double end_us) {
  return {static_cast<uint16_t>(core), step, static_cast<TimeFs>(start_us * kUs),
          static_cast<TimeFs>(end_us * kUs)};
}

inline HostRecord Host(int core, HostKind kind, double start_us, double end_us, uint32_t step) {
  return {static_cast<uint16_t>(core), kind, static_cast<TimeFs>(start_us * kUs),
          static_cast<TimeFs>(end_us * kUs), step};
}

inline RecorderOptions Opts(int cores) {
  RecorderOptions o;
  o.num_cores = cores;
  o.sample_interval_fs = 10 * kUs;
  return o;
}

}  // namespace tpusim::profiler::testing
