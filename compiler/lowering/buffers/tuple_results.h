// Where the elements of an op's tuple result live, for kernels that write them directly.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// One entry per result element (one for an array result): the buffer of the
// get-tuple-element reading it, or nullopt when nothing reads it. False when the tuple is
// read otherwise (the root, a tuple, a call), whose element buffers a kernel cannot name.
bool TupleResultAddresses(const hlo::HloInstruction& instr, const OpContext& c,
                          std::vector<std::optional<uint64_t>>& out);

}  // namespace tpusim::lowering
