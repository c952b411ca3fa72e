// How the streaming exact dot (exact_dot_kernel.h) cuts C[M,N] = A[M,K] x B[K,N]: result
// blocks of mb x nb (the MXUs' accumulators hold one while the previous one is popped), K in
// chunks of kc, each operand chunk staged in VMEM by DMA and packed to bf16 by the VPU into
// double buffers, and where the buffers go in VMEM. Sizes are multiples of the MXU tile.
#pragma once

#include <cstdint>

#include "compiler/lowering/dot/exact_dot_kernel.h"

namespace tpusim::lowering {

// Bytes one step loads (both operands' chunks): large copies hide dma_latency_cycles, small
// ones shorten the pipeline's fill and drain. A kernel design choice, not a hardware number.
inline constexpr int64_t kExactDotStepBytes = 2 << 20;
// What a step costs beyond its bytes, counted as bytes when choosing block sizes: about the
// copies' start latency (sim/configs dma_latency_cycles, 500 cycles ~ 240 KB of HBM time).
inline constexpr int64_t kExactDotStepOverheadBytes = 256 << 10;

// SMEM words (byte addresses) of a batched dot's cursor: A's and B's offset for the instance
// being fetched, its inner index, the instance being computed and the one being copied out.
inline constexpr int kBatchWordA = 64, kBatchWordB = 68, kBatchWordInner = 72;
inline constexpr int kBatchWordComputed = 76, kBatchWordPending = 80;

// One operand as stored in HBM: X = A, A^T, B or B^T, row-major [rows, cols].
struct DotOperand {
  uint64_t hbm = 0;
  int64_t rows = 0, cols = 0;
  int64_t elem = 4;                            // bytes per element in HBM (f32 or bf16)
  int64_t chunk_rows = 0, chunk_cols = 0;      // a chunk of X; chunk_cols is a multiple of 128
  int64_t ld = 0;                              // elements between X's rows in HBM
  int64_t outer_stride = 0, inner_stride = 0;  // bytes between batch instances
  bool k_in_rows = false;  // K runs along X's rows (A^T, B), else along its columns (A, B^T)
  bool transpose = false;  // the VPU transposes its 128x128 tiles (A^T: LHS rows must be M)
  bool resident = false;   // a single chunk, packed once before the loop
  int batch_word = -1;     // SMEM byte address of the fetched instance's offset (-1: none)
  uint64_t stage = 0, packed = 0;  // VMEM: staging buffer 0 (elem) and packed buffer 0 (bf16)
  int64_t row_chunks() const { return (rows + chunk_rows - 1) / chunk_rows; }
  int64_t col_chunks() const { return (cols + chunk_cols - 1) / chunk_cols; }
  // Staging and packed chunks are column-blocked: [chunk_cols / 128][chunk_rows][128].
  int64_t stage_bytes() const { return chunk_rows * chunk_cols * elem; }
  int64_t packed_bytes() const { return chunk_rows * chunk_cols * 2; }
  int buffers() const { return resident ? 1 : 2; }
};

struct ExactDotPlan {
  int64_t m = 0, k = 0, n = 0;
  DotBatch batch;
  int64_t mb = 0, nb = 0, kc = 0;  // result block rows, columns; K chunk
  int64_t per_mxu = 0;             // 128-column blocks of a result block on each MXU
  int mxus = 1;                    // MXUs used (nb = per_mxu * mxus * 128)
  bool b_transposed = false;       // B arrives as B^T: weights load with mxu.ldwt
  DotOperand a, b;
  uint64_t out = 0;  // VMEM: two f32 result buffers [nb / 128][mb][128]
  uint64_t vmem_end = 0;
  int64_t m_blocks() const { return (m + mb - 1) / mb; }
  int64_t n_blocks() const { return (n + nb - 1) / nb; }
  int64_t k_chunks() const { return (k + kc - 1) / kc; }
  int64_t out_bytes() const { return mb * nb * 4; }
};

// The plan for `d`; throws std::invalid_argument when DMA alignment cannot be met (bf16
// rows of odd length) or the shapes do not match.
ExactDotPlan PlanExactDot(const ExactDotShape& d);

}  // namespace tpusim::lowering
