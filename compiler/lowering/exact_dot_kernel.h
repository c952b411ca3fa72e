// A dot the MXUs compute exactly for any 2-D dimension numbers and f32 or bf16 operands
// (DEFAULT precision: one bf16 pass, as XLA on TPU): both operands are packed into VMEM as
// bf16 by DMA and the VPU (pack_kernel.h; transposed and padded on the way), the MXUs
// multiply 128-column blocks of the result, and the f32 result rows go back to HBM by
// strided DMA, so no padding reaches HBM. Everything lives in VMEM at once, which bounds
// the sizes it takes.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/lowering/pack_kernel.h"

namespace tpusim::lowering {

inline constexpr int64_t kExactDotVmemBytes = 16 << 20;  // sim/configs vmem_bytes (v2, v3)
inline constexpr int64_t kExactDotAccRows = 2048;        // half of mxu_result_buffer_rows
inline constexpr int64_t kExactDotMaxBlocks = 128;  // packed blocks: bounds the code (unrolled)

struct ExactDotShape {
  int64_t m = 0, k = 0, n = 0;
  PackSource a, b;  // logical A[m, k] and B[k, n] (rows/cols filled by the caller)
  uint64_t c = 0;   // HBM, f32[m, n] row-major
  std::string tag;
  int mxus = 2;
};

// The kernel; throws std::invalid_argument when the operands do not fit VMEM, M exceeds
// the accumulators or DMA alignment fails (callers fall back to the timing kernel).
std::string ExactDotKernel(const ExactDotShape& shape);

}  // namespace tpusim::lowering
