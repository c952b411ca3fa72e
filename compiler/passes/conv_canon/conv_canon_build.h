// The HLO the conv-canonicalization pass emits: slices, pads, adds, bitcasts, concatenates
// and convolutions appended to one computation, each named after the convolution rewritten.
// Identity slices and pads are not emitted. Conv() emits a convolution only if it runs on an
// exact kernel (target/target_description.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"
#include "compiler/target/target_description.h"

namespace tpusim::passes {

class ConvRewriteBuilder {
 public:
  // New instructions go to `target`; `conv` (in any computation) names them and lends its
  // attributes (precision, metadata) to the convolutions.
  // `kernels` says which convolutions run on an exact kernel.
  ConvRewriteBuilder(hlo::HloComputation& target, const hlo::HloInstruction& conv,
                     const target::TargetDescription& kernels)
      : target_(target), conv_(conv), kernels_(kernels) {}

  hlo::HloInstruction* Slice(hlo::HloInstruction* x, const std::vector<hlo::SliceDim>& dims);
  // Pads with zeros; negative low or high padding is not allowed.
  hlo::HloInstruction* Pad(hlo::HloInstruction* x, const std::vector<hlo::PadDim>& dims);
  hlo::HloInstruction* Add(hlo::HloInstruction* a, hlo::HloInstruction* b);
  // A row-major reshape as a bitcast: the memory plan and the lowering both alias it to its
  // operand's buffer (the plan gives a reshape a buffer of its own that the lowering, which
  // emits no code for it, never writes).
  hlo::HloInstruction* Bitcast(hlo::HloInstruction* x, std::vector<int64_t> dims);
  hlo::HloInstruction* Concatenate(const std::vector<hlo::HloInstruction*>& parts, int64_t dim);
  // `x` converted to `type` (x itself when it has that type).
  hlo::HloInstruction* Convert(hlo::HloInstruction* x, hlo::PrimitiveType type);
  // Output dimension k is operand dimension perm[k].
  hlo::HloInstruction* Transpose(hlo::HloInstruction* x, const std::vector<int64_t>& perm);
  // A copy of the rewritten convolution over `lhs` and `rhs` with `window` and result
  // dimensions `dims` of type Accumulation(), named <conv>.<suffix>; nullptr (and nothing
  // emitted) when no exact kernel takes it.
  hlo::HloInstruction* Conv(hlo::HloInstruction* lhs, hlo::HloInstruction* rhs,
                            const hlo::Window& window, std::vector<int64_t> dims,
                            std::string_view suffix = "phase");
  // The result type of the convolutions built: f32 for a weight gradient (f01b_i01o->01bf)
  // with a bf16 result, which the MXU accumulates in f32 and rounds once (the rewrite
  // converts its sum: Finish), else the rewritten convolution's own.
  hlo::PrimitiveType Accumulation() const;
  // `value` (of type Accumulation()) converted to the rewritten convolution's result type.
  hlo::HloInstruction* Finish(hlo::HloInstruction* value);
  hlo::HloComputation& target() { return target_; }
  const target::TargetDescription& kernels() const { return kernels_; }

 private:
  // A new instruction of element type `type` (the operand's, for data movement).
  hlo::HloInstruction* New(std::string_view suffix, hlo::Opcode opcode, hlo::PrimitiveType type,
                           std::vector<int64_t> dims,
                           const std::vector<hlo::HloInstruction*>& operands);
  hlo::HloInstruction* Zero(hlo::PrimitiveType type);  // one constant per type

  hlo::HloComputation& target_;
  const hlo::HloInstruction& conv_;
  const target::TargetDescription& kernels_;
  std::map<hlo::PrimitiveType, hlo::HloInstruction*> zeros_;
};

// Floor and ceiling of a / b for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b);
int64_t CeilDiv(int64_t a, int64_t b);

}  // namespace tpusim::passes
