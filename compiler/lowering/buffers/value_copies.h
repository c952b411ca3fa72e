// Copies of whole values HBM -> HBM that control flow adds (lower.cc): a while's initial
// state and its body's result into the state, a call's result leaf passed through from a
// parameter. They run on the strided-DMA move kernel (move_kernel.h); a constant, which has
// no buffer, is a fill of its value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::lowering {

// The 4-byte word every element of constant `c` is stored as in HBM (one value repeated;
// f32, s32, u32, pred and the float types stored as f32, bf16 twice), or none (values
// that differ, an elided literal, 8-byte elements).
std::optional<uint32_t> ConstantWord(const hlo::HloInstruction& c);

// The words a constant of several values is stored as in HBM: one per f32, s32 or u32
// element, two bf16 elements per word (an even count); empty for other constants, and for
// more than kMaxConstantWords.
inline constexpr size_t kMaxConstantWords = 1024;
std::vector<uint32_t> ConstantWords(const hlo::HloInstruction& c);

struct ValueCopy {
  uint64_t dst = 0, bytes = 0;   // bytes are rounded up to whole 4-byte words
  uint64_t src = 0;              // HBM, when there is no fill
  std::optional<uint32_t> fill;  // every word of dst (a constant)
  std::vector<uint32_t> words;   // the words of dst, in order (a constant of several values)
};

// The kernels: the copies move at once (they must not overlap), after the last fill; every
// other fill and every constant of several values is a kernel of its own (the VPU writes
// each word into its own vreg row of VMEM, one strided DMA gathers them into place). Each
// waits until its copies have landed.
std::vector<std::string> CopyKernels(const std::vector<ValueCopy>& copies, const std::string& tag);

}  // namespace tpusim::lowering
