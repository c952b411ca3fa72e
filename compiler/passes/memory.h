// Memory planning (an analysis; the IR is not changed): sizes every HBM buffer of the entry
// computation with its padded layout, computes live ranges over the instruction order,
// assigns offsets with liveness-based reuse, and fails like XLA when the program does not
// fit in one core's HBM.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/passes/pass.h"

namespace tpusim::passes {

inline constexpr int64_t kDefaultHbmBytes = int64_t{16} << 30;  // per v3 core

struct BufferInfo {
  std::string name;   // the instruction defining the buffer
  std::string shape;  // with its layout
  std::string kind;   // "parameter", "output" or "temp"
  int64_t size = 0;   // padded bytes
  int64_t logical_size = 0;
  int64_t start = 0, end = 0;  // live over instruction positions [start, end]
  int64_t offset = 0;          // in HBM
  int64_t last_read = -1;      // position of the last instruction reading it (-1: none)
  std::string in_place_of;     // an output written into this entry parameter's buffer
};

struct MemoryPlan {
  std::vector<BufferInfo> buffers;  // in instruction order
  int64_t peak_bytes = 0;           // HBM the offsets span: what the program needs
  int64_t peak_live_bytes = 0;      // largest sum of simultaneously live buffers (a bound)
  const BufferInfo* Find(const std::string& name) const;

 private:
  mutable std::unordered_map<std::string, size_t> index_;  // built on first Find
};

// Whether `i`'s value lives in its operands' buffers (tuple, get-tuple-element, bitcast,
// reshape): it defines no buffer of its own.
bool LivesInOperandBuffers(const hlo::HloInstruction& i);

// "512B", "1.50K", "17.20G": the byte counts of XLA's out-of-memory messages.
std::string HumanBytes(int64_t bytes);

// The name of the buffer holding element `index` of a tuple-shaped op's result.
std::string ElementBufferName(const std::string& name, int64_t index);

// Plans the entry computation of `module`. Tuples, get-tuple-element and bitcast define no
// buffer of their own; they keep their operands' buffers alive (get-tuple-element only its
// element's). Any other tuple-shaped result is one buffer per element.
// Outputs named by the module's input_output_alias take over their parameter's buffer
// (donation) when no instruction after the output's producer reads the parameter and the
// producer works element by element (it may then write what it reads).
MemoryPlan PlanMemory(const hlo::HloModule& module);

// The XLA-style RESOURCE_EXHAUSTED message for a plan over `capacity` bytes.
std::string OutOfMemoryMessage(const MemoryPlan& plan, int64_t capacity, int top = 5);

class MemoryPlanningPass : public HloPass {
 public:
  explicit MemoryPlanningPass(int64_t hbm_capacity_bytes = kDefaultHbmBytes)
      : capacity_(hbm_capacity_bytes) {}
  std::string_view name() const override { return "memory-planning"; }
  // Never changes the module; fails with RESOURCE_EXHAUSTED when the plan exceeds capacity.
  hlo::Result<bool> Run(hlo::HloModule& module) override;
  const MemoryPlan& plan() const { return plan_; }

 private:
  int64_t capacity_;
  MemoryPlan plan_;
};

}  // namespace tpusim::passes
