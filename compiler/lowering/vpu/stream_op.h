// Whole HLO ops as VPU streams (vpu_stream.h): the exact stream of an elementwise body, and
// the timing-only streams of ops no exact kernel takes (a reduction-like pass over the
// operands, or a fill of the result).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/lowering/driver/lower.h"
#include "compiler/lowering/driver/op_context.h"
#include "compiler/lowering/vpu/vpu_body.h"

namespace tpusim::lowering {

// An f32 scalar: the stream splats it into its vreg.
bool IsF32Scalar(const hlo::Shape& s);

// A stream over `inputs` (the first six arrays) into `instr`'s buffer. With `body`, each
// vreg runs the body; without, `ops_per_vreg` adds fold into an accumulator (the timing of
// a reduction-like op). Fills `op` (VPU, bytes).
std::string StreamOp(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op,
                     std::vector<const hlo::HloInstruction*> inputs, const VpuBody* body,
                     int ops_per_vreg);

// Whether MultiOutputStreamOp computes `fusion`'s values: a kLoop fusion whose root is a
// tuple of 2 or 3 float results of one size (a whole number of vregs), its body exact, its
// inputs (at most 6) full size or f32 scalars, inputs and results in a slot's 8 areas.
bool MultiOutputLoopOnExactKernel(const hlo::HloInstruction& fusion);
// The body MultiOutputStreamOp computes `fusion` with, when it does (as above).
std::optional<VpuBody> MultiOutputLoopBody(const hlo::HloInstruction& fusion);

// A loop fusion whose root is a tuple of elementwise results (XLA's multi-output loop
// fusion): one stream over its inputs storing each element at `outputs` (addresses, in
// order). Fills `op`; exact when the body is and every operand is full size.
std::string MultiOutputStreamOp(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op,
                                const VpuBody& body, const std::vector<uint64_t>& outputs);

// Timing only: one pass over every operand at VpuOpsPerVreg(instr) operations per vreg.
std::string ReductionStreamOp(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op);
// Timing only: the result written once, the operands (up to six) read once.
std::string FillStreamOp(const hlo::HloInstruction& instr, const OpContext& c, LoweredOp& op);

// After an exact VPU stream: the sequencer waits until its last results have reached HBM.
// A `signal dma` (the drain barrier) does not wait for copies still in flight, so the next
// kernel could read a result before it lands. The stream's output credits (f4, f5; one per
// buffer, vpu_stream.cc) are back once its copies are done; f15 (used by no kernel, reset
// first) says the VPU is past its last wait for one.
inline constexpr const char* kStreamOutputFence =
    "    sflag f15, 0\n    signal vpu, f15, 1\n    wait seq, f15, 1\n    wait seq, f4, 1\n"
    "    wait seq, f5, 1\n";

}  // namespace tpusim::lowering
