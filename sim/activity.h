// What the simulated hardware reports as it runs: one record per unit per executed
// instruction (busy interval), plus step boundaries and sync-flag waits. The profiler
// implements IActivitySink; the simulator knows nothing of metrics or traces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"

namespace tpusim::sim {

// Simulated time in femtoseconds (SystemC runs at 1 fs resolution so that a 940 MHz
// cycle, 1063829.8 fs, rounds by well under a femtosecond).
using TimeFs = uint64_t;

struct BusyRecord {
  uint16_t core = 0;  // global core index on the board
  isa::Unit unit = isa::Unit::kScalar;
  uint8_t stream = 0;  // the instruction stream that issued it: 0 main, 1 collective
  TimeFs start = 0;
  TimeFs end = 0;
  uint32_t pc = 0;  // instruction index in the core's program
  isa::Opcode op = isa::Opcode::kNop;
  uint16_t tag = 0;    // HLO-op tag index (Program::tags)
  uint32_t step = 0;   // training step this work belongs to
  double flops = 0;    // useful floating-point operations (2 per MAC)
  uint64_t bytes = 0;  // bytes read + written in HBM by this instruction
};

// A unit that waited on a sync flag (stalled, not busy).
struct WaitRecord {
  uint16_t core = 0;
  isa::Unit unit = isa::Unit::kScalar;
  TimeFs start = 0;
  TimeFs end = 0;
  uint8_t flag = 0;
  uint32_t step = 0;
};

struct StepRecord {
  uint16_t core = 0;
  uint32_t step = 0;
  TimeFs start = 0;
  TimeFs end = 0;
};

// Host- and board-level activity: what a core's time went to outside its own units.
enum class HostKind : uint8_t {
  kInfeedWait,    // the core idles waiting for the next input batch
  kOutfeed,       // the core sends results to the host
  kHostToDevice,  // host-to-device transfer (weights, non-infeed inputs)
  kHostOverhead,  // host dispatch / launch overhead between executions
  kAllReduce,     // cross-replica reduction (compute and synchronisation)
};
inline constexpr int kNumHostKinds = 5;

struct HostRecord {
  uint16_t core = 0;
  HostKind kind = HostKind::kInfeedWait;
  TimeFs start = 0;
  TimeFs end = 0;
  uint32_t step = 0;
};

class IActivitySink {
 public:
  virtual ~IActivitySink() = default;
  virtual void OnBusy(const BusyRecord& r) = 0;
  virtual void OnWait(const WaitRecord& r) = 0;
  virtual void OnStep(const StepRecord& r) = 0;
  virtual void OnHost(const HostRecord&) {}
};

}  // namespace tpusim::sim
