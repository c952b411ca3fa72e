// Which values of a single-replica module carry the batch, for data parallelism over the
// board's cores. Weights are the parameters that feed the weight operand of a dot or
// convolution, and parameters of rank >= 2 shaped like one (optimizer state); the batch is the
// leading dimension of the last other entry parameter of rank >= 2 (inputs follow the weights in
// JAX and TF steps; rank-1 parameters are biases and scales more often than labels), and every
// non-weight parameter with that leading dimension is an input. A value carries the batch when an
// operand does and its shape still has a dimension of that size; a value computed from carrying
// operands that no longer has one (a weight gradient, the loss) is reduced over the batch: each
// core holds a partial sum (or maximum, or its rows of a slice of the batch) that must be
// all-reduced; any other op that takes the batch dimension away (a reshape merging it, a
// concatenate, a reduce by another function) keeps the module whole, with the reason. Inside a
// loop, call or conditional run on each core's share, an op that reduces over the batch is
// all-reduced right after it, so their results are whole.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/collectives/ring_emitter.h"
#include "compiler/hlo/ir.h"

namespace tpusim::lowering {

struct BatchAnalysis {
  int64_t batch = 0;  // 0: nothing to split
  std::vector<const hlo::HloInstruction*> inputs;
  std::set<const hlo::HloInstruction*> carrying;
  // Values each core holds part of, and how the cores' parts combine.
  std::map<const hlo::HloInstruction*, collectives::ReduceOp> reduced;
  std::string why_not;  // when batch == 0: why the module runs whole on every core
};

BatchAnalysis AnalyzeBatch(const hlo::HloComputation& entry, int cores);

// Entry parameters that reach operand `index` of an instruction with one of the `users`
// opcodes, in the entry or in a computation a while loop, call or conditional runs, through
// converts, copies, reshapes, bitcasts, tuples and the values callers pass (a dot's or
// convolution's operand 1: the weights, a loop's carried weights included).
std::set<const hlo::HloInstruction*> ParametersFeeding(const hlo::HloComputation& entry,
                                                       std::initializer_list<hlo::Opcode> users,
                                                       size_t index);

// Whether `shape` (any tuple leaf) has a dimension of size `batch`.
bool HasDim(const hlo::Shape& shape, int64_t batch);

// The shape of each core's share of an array whose leading dimension is the split `batch`
// (inputs are split that way, and kernels that keep the batch leading write their share
// so): the leading dimension divided by `cores`. The shape itself when no dimension has
// the batch's size (or `batch` is 0); nullopt when another dimension does (the share's
// layout is not known).
std::optional<hlo::Shape> ShareOf(const hlo::Shape& shape, int64_t batch, int cores);

}  // namespace tpusim::lowering
