// Random numbers on the VPU: rng (RNG_UNIFORM or RNG_NORMAL, f32, constant bounds or mean and
// standard deviation; the normal one by Box-Muller with vlog, vsqrt and the composed cosine
// of vpu_math.h) and rng-bit-generator (32-bit bits) compute the evaluator's counter-based stream
// (compiler/eval/counter_rng.h) at vector rate: each vreg holds 1024 consecutive element counters,
// hashed by two rounds of xor-shift-multiply keyed by the draw's key, then written to HBM in
// double-buffered chunks.
#pragma once

#include <string>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {

// The kernel for an rng or rng-bit-generator `instr`, with `op` filled (exact), or empty when
// it does not take it: bounds that are not f32 constants, other element types, an op inside a
// loop or branch (each run draws anew), or a state of more than 64 elements. `seed` is the
// evaluator's EvalOptions::rng_seed.
std::string RngKernel(const hlo::HloInstruction& instr, const OpContext& ctx, uint64_t seed,
                      LoweredOp& op);

}  // namespace tpusim::lowering
