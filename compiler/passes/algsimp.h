// Algebraic simplification: local rewrites that remove work without changing results.
//
//   add(x, 0) -> x           integers; for floats only x + (-0.0), which is exact
//   multiply(x, 1) -> x      all types (exact in IEEE arithmetic, NaN * 1 is NaN)
//   multiply(x, 0) -> 0      integers only (for floats NaN * 0 and inf * 0 are NaN)
//   reshape(reshape(x)) -> reshape(x);  transpose(transpose(x)) -> one transpose
//   identity transpose, reshape, broadcast, convert; full-range slice; one-operand
//   concatenate; pad with an all-zero config -> the operand
//   opt-barrier(x) -> x      (jax.checkpoint's barrier: tpusim's kernels run in program
//                             order, so there is no reordering to prevent)
//   convert(convert(x)) -> x when the inner convert widens exactly: for 32-bit and wider x
//                             always; for bf16 x only where the target's kernels read a bf16
//                             value of x's shape exactly (x gains the users the pair had)
//
// Zeros and ones are constants (every value equal) or broadcasts of such constants. A
// rewrite to an operand requires the same shape, and the same layout when both have one.
#pragma once

#include "compiler/passes/ir_edit.h"
#include "compiler/passes/pass.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

// The instruction that computes the same value as `instr` more cheaply, or nullptr. Operands
// are looked through `edits` (earlier rewrites of the same sweep); new instructions are
// appended to instr's computation. `target` (may be null: no narrow-type rewrites) says
// which values the kernels read exactly.
hlo::HloInstruction* SimplifyInstruction(hlo::HloInstruction& instr, const ModuleEdits& edits,
                                         const target::TargetDescription* target = nullptr);

class AlgebraicSimplifierPass : public HloPass {
 public:
  // `target`, when given, outlives the pass.
  explicit AlgebraicSimplifierPass(const target::TargetDescription* target = nullptr)
      : target_(target) {}
  std::string_view name() const override { return "algsimp"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  const target::TargetDescription* target_;
};

}  // namespace tpusim::passes
