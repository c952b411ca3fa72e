// Which entry parameters of a single-replica module without shardings carry the batch, for
// the data parallelism tpusim infers over the board's cores (batch_sharding.h writes it as a
// sharding). Weights are the parameters that feed the weight operand of a dot or convolution
// or the table of a gather (embeddings), and parameters of rank >= 2 shaped like one
// (optimizer state); the batch is the leading
// dimension of the last other entry parameter of rank >= 2 (inputs follow the weights in JAX
// and TF steps; rank-1 parameters are biases and scales more often than labels), and every
// non-weight parameter with that leading dimension is an input (of rank 1 only when it is not
// floating point: labels, not a bias or scale that happens to have the batch's length). The split
// is taken when every value computed from the batch either keeps a dimension of its size or reduces
// over it in a way the devices' parts combine by an all-reduce (sums, maxima, contractions,
// batch-norm statistics, slices); a reshape merging the batch, a concatenate or a reduce by another
// function keeps the module whole, with the reason, as does a leading dimension a loop
// indexes (the time axis of a scan).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::spmd {

struct BatchAnalysis {
  int64_t batch = 0;  // 0: nothing to split
  std::vector<const hlo::HloInstruction*> inputs;
  std::string why_not;  // when batch == 0: why the module runs whole on every core
};

// The module's entry computation must exist.
BatchAnalysis AnalyzeBatch(const hlo::HloModule& module, int64_t devices);

// Entry parameters that reach operand `index` of an instruction with one of the `users`
// opcodes, in the entry or in a computation a while loop, call or conditional runs, through
// converts, copies, reshapes, bitcasts, tuples and the values callers pass (a dot's or
// convolution's operand 1: the weights, a loop's carried weights included).
std::set<const hlo::HloInstruction*> ParametersFeeding(const hlo::HloComputation& entry,
                                                       std::initializer_list<hlo::Opcode> users,
                                                       size_t index);

// Whether `shape` (any tuple leaf) has a dimension of size `batch`.
bool HasDim(const hlo::Shape& shape, int64_t batch);

}  // namespace tpusim::spmd
