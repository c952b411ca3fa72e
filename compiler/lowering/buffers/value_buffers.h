// Where every value of a lowered module lives in HBM (lower.cc). Entry values sit at the
// memory plan's offsets. Values inside while bodies, called computations and conditional
// branches get buffers of their own above the plan, one per value and tuple element each
// time their computation is lowered (not per loop iteration). A computation's parameter is
// bound to what its caller passes (a call's operand, a branch's operand, a while's state),
// and a result leaf may be placed straight into its caller's buffer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "compiler/hlo/ir.h"
#include "compiler/passes/memory.h"

namespace tpusim::lowering {

// Element `element` of a tuple-shaped shape (the shape itself for an array).
const hlo::Shape& ElementShape(const hlo::Shape& s, int64_t element);

// The value (and its tuple element) that owns the buffer of element `element` of `v`: through
// tuples, get-tuple-element, bitcasts, reshapes and bound parameters.
using ValueElement = std::pair<const hlo::HloInstruction*, int64_t>;

class ValueBuffers {
 public:
  ValueBuffers(const hlo::HloModule& module, const passes::MemoryPlan& plan);

  ValueElement Resolve(const hlo::HloInstruction* v, int64_t element = 0) const;
  // The HBM address of element `element` of `v` (passes::ElementBufferName for tuples);
  // a value inside a called computation gets its buffer on first use.
  uint64_t Address(const hlo::HloInstruction* v, int64_t element = 0);
  // The HBM bytes [begin, end) of element `element` of an entry value, padding included, from
  // the memory plan; nullopt for a constant (no buffer: kernels inline it) or a value
  // outside the entry.
  std::optional<std::pair<uint64_t, uint64_t>> EntryRange(const hlo::HloInstruction* v,
                                                          int64_t element = 0) const;

  // Reads of `param` (a parameter of a non-entry computation) read `value`.
  void Bind(const hlo::HloInstruction* param, const hlo::HloInstruction* value);
  // Computes element `element` of `leaf` into `address` (a caller's result buffer); false
  // when it already has a buffer.
  bool Place(const hlo::HloInstruction* leaf, int64_t element, uint64_t address);
  // Before a computation is lowered again (another call site): its values get new buffers.
  void Forget(const hlo::HloComputation* comp);

  // A buffer for a loop's state copies, one per (while, element), allocated once.
  uint64_t Staging(const hlo::HloInstruction* loop, int64_t element, uint64_t bytes);

  // Where the buffers above the plan end.
  uint64_t top() const { return next_; }
  // Throws std::invalid_argument with a RESOURCE_EXHAUSTED message naming the largest buffers
  // above the plan when they end beyond `capacity` bytes of HBM.
  void CheckCapacity(uint64_t capacity) const;

 private:
  struct Owned {
    uint64_t address = 0, bytes = 0;
    std::string name, shape;
  };
  uint64_t Allocate(uint64_t bytes, std::string name, std::string shape);

  const hlo::HloModule& module_;
  const passes::MemoryPlan& plan_;
  uint64_t base_ = 0, next_ = 0;
  std::map<const hlo::HloInstruction*, const hlo::HloInstruction*> bound_;
  std::map<ValueElement, uint64_t> own_;
  std::map<ValueElement, uint64_t> staging_;
  std::map<uint64_t, Owned> allocations_;  // by address: the capacity report
};

}  // namespace tpusim::lowering
