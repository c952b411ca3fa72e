// The exact dot for any size: a 2-D dot at DEFAULT precision with f32 or bf16 operands and
// an f32 result (either contracting dimension), computed as XLA on TPU does: operands
// rounded to bf16, products summed in f32 in K order. C[M,N] = A[M,K] x B[K,N] runs in result
// blocks that fit the MXU accumulators, K streamed in chunks (exact_dot_plan.h). Each step
// copies the next chunk of A and B into VMEM by DMA while the VPU packs the current one to
// bf16 (pack_kernel.h; transposing A^T tiles, zero-filling K padding) and the MXUs multiply,
// all double-buffered; a finished block is popped and copied to HBM by strided DMA (no
// padding reaches HBM). The program loops with scalar counters: its size does not depend on
// M, K or N.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::lowering {

inline constexpr int64_t kExactDotVmemBytes = 16 << 20;    // sim/configs vmem_bytes (v2, v3)
inline constexpr int64_t kExactDotAccRows = 2048;          // half of mxu_result_buffer_rows
inline constexpr int64_t kPackEdge = 128;                  // MXU tile edge
inline constexpr int64_t kPackSublanes = 8;                // rows of one vreg
inline constexpr int64_t kPackedRowBytes = kPackEdge * 2;  // one bf16 row of 128

// The logical matrix X[rows, cols]; in HBM row-major as X, or as X^T when `transposed`.
struct PackSource {
  uint64_t address = 0;  // HBM
  int64_t rows = 0, cols = 0;
  bool transposed = false;
  bool bf16 = false;                           // element type in HBM (else f32)
  int64_t row_stride = 0;                      // elements between the stored rows (0: dense)
  int64_t outer_stride = 0, inner_stride = 0;  // elements between batch instances (below)
};

// A batched dot runs outer x inner instances; instance (i, j) reads its operands at
// address + (i * outer_stride + j * inner_stride) elements and writes C at instance
// i * inner + j of a dense [outer, inner, m, n] result. Instances follow each other in the
// kernel's step sequence, so the pipeline does not drain between them.
struct DotBatch {
  int64_t outer = 1, inner = 1;
  int64_t count() const { return outer * inner; }
};

struct ExactDotShape {
  int64_t m = 0, k = 0, n = 0;
  PackSource a, b;  // logical A[m, k] and B[k, n] (rows/cols filled by the caller)
  uint64_t c = 0;   // HBM, f32[m, n] row-major (for each batch instance)
  DotBatch batch;
  std::string tag;
  int mxus = 2;
  int64_t vmem_bytes = kExactDotVmemBytes;  // the VMEM its buffers may take, from offset 0
};

// The kernel; throws std::invalid_argument when DMA alignment cannot be met (bf16 rows of
// odd length; callers fall back to the timing kernel).
std::string ExactDotKernel(const ExactDotShape& shape);

}  // namespace tpusim::lowering
