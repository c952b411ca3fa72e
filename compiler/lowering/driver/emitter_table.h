// The opcode -> emitter table (emitter_table.def) as data: what the Lowerer does with each
// instruction.
#pragma once

#include "compiler/hlo/ir.h"
#include "compiler/hlo/opcode.h"
#include "compiler/lowering/driver/emitters.h"

namespace tpusim::lowering {

struct EmitterRow {
  enum class Kind { kNone, kNoCode, kKernel, kCoreKernels, kControl };
  Kind kind = Kind::kNone;                    // kNone: no row, the op is refused
  KernelEmitter kernel = nullptr;             // kKernel
  CoreKernelsEmitter core_kernels = nullptr;  // kCoreKernels
};

// The row of `opcode`.
const EmitterRow& EmitterFor(hlo::Opcode opcode);

// Ops with no kernel: their result is another value's buffer or has no data in HBM
// (constants are inlined into the kernels that read them).
bool DefinesNoBuffer(const hlo::HloInstruction& i);

}  // namespace tpusim::lowering
