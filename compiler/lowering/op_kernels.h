// The kernel each HLO instruction becomes on one core (lower.h): which kind, its assembly
// and what it costs. Collectives are per core (ring position) and live in lower.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/lower.h"

namespace tpusim::lowering {

struct OpContext {
  std::function<uint64_t(const hlo::HloInstruction*)> address;  // HBM buffer of a value
  int cores = 1;
  int mxus = 2;
  uint64_t rng_seed = 0;  // LowerOptions::rng_seed
};

// An array of 32-bit words the VPU holds as they are: f32, s32 or u32.
bool IsWord32(const hlo::Shape& s);

// Bytes of a value of `shape` (a tuple: all leaves).
uint64_t ByteSize(const hlo::Shape& shape);

// Fills `op` (kind, flops, bytes, exact, note) and returns the kernel's assembly; empty for
// instructions that need no code (parameter, tuple, bitcast, ...). Throws
// std::invalid_argument with the reason when the instruction cannot be lowered.
std::string OpKernel(const hlo::HloInstruction& instr, const OpContext& ctx, LoweredOp& op);

// Ops with no kernel: their result is another value's buffer or has no data in HBM
// (constants are inlined into the kernels that read them).
bool DefinesNoBuffer(const hlo::HloInstruction& i);

}  // namespace tpusim::lowering
