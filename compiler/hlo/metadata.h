// The framework's record of where an instruction came from: XLA's OpMetadata as printed,
// metadata={op_name="jit(step)/MnistCnn/Conv_0/conv_general_dilated" source_file="train.py"
// source_line=17} or, in newer dumps, stack_frame_id=N into the module's stack-frame tables.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/ir.h"

namespace tpusim::hlo {

struct OpMetadata {
  std::string op_type, op_name, source_file;
  int64_t source_line = 0;
  int64_t stack_frame_id = 0;  // 0: none
};

// The instruction's metadata attribute, fields absent from it left empty or 0; a fusion
// without one takes its fused root's.
OpMetadata MetadataOf(const HloInstruction& i);

// "file:line" of the Python source that made `i`: source_file and source_line, else the
// innermost frame of its stack_frame_id in `m`'s tables outside installed packages (the
// user's line that called flax or optax), or the innermost one; "" when neither says.
std::string SourceLocation(const HloModule& m, const HloInstruction& i);

}  // namespace tpusim::hlo
