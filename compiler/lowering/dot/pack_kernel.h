// Assembly pieces of the streaming exact dot (exact_dot_kernel.h): bringing one chunk of an
// operand from HBM into its VMEM staging buffer (strided DMA, zero-filled K padding) and
// packing it to bf16 in the MXU layout (VPU: widen, transpose A^T tiles, round). A chunk's
// size depends on whether it is the last along each dimension; `ChunkCases` branches on that
// at run time, so the code does not grow with the number of chunks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "compiler/lowering/dot/exact_dot_plan.h"

namespace tpusim::lowering {

// The program being written: code, its DMA descriptors and fresh labels.
class StreamAsm {
 public:
  std::ostringstream code;
  std::string Label(const std::string& stem) { return stem + std::to_string(labels_++); }
  // The name of a descriptor with these fields (defined once).
  std::string Desc(int64_t rows, int64_t row_bytes, int64_t src_stride, int64_t dst_stride,
                   int64_t planes = 1, int64_t src_plane_stride = 0, int64_t dst_plane_stride = 0);
  // rd += rs * factor (factor may exceed 32 bits); clobbers r2, r3.
  void MulAdd(int rd, int rs, int64_t factor);
  std::string Text(const std::string& header) const { return header + head_.str() + code.str(); }

 private:
  std::ostringstream head_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, std::string>
      descs_;
  int labels_ = 0;
};

// Sync flags of the kernel (kernels own f0..f15, asm_util.h).
// + parity: A's chunk copies landed in staging buffer `parity` (DMA); B's on their own
// flags, since a small chunk of one may land before a large chunk of the other.
inline constexpr int kLoadedFlagA = 0, kLoadedFlagB = 11;
inline constexpr int kStageFreeFlag = 2;   // the VPU is done with earlier staging (VPU -> DMA)
inline constexpr int kResidentFlag = 3;    // the resident operand's copies landed
inline constexpr int kReadyFlag = 4;       // + MXU: a packed chunk is ready (VPU -> MXU)
inline constexpr int kPackedFreeFlag = 6;  // + MXU: the MXU is done with a packed buffer
inline constexpr int kPoppedFlag = 8;      // results popped to VMEM (MXUs -> DMA)
inline constexpr int kOutFlag = 9;         // + parity: result copies landed in HBM
// Register r28 is the scratch of ChunkCases; the bodies must not use it.
inline constexpr int kCaseScratch = 28;

// Emits, for each chunk size the chunk at row index `row_reg` and column index `col_reg` of
// `x` can have, a branch running `body(rows, cols)` (the valid extent of the chunk).
void ChunkCases(StreamAsm& s, const DotOperand& x, int row_reg, int col_reg,
                const std::function<void(int64_t rows, int64_t cols)>& body);

// Copies issued for a chunk of this extent.
int ChunkCopies(int64_t cols);

// Copies chunk (row_reg, col_reg) of valid extent rows x cols into staging buffer `parity`
// (after the VPU is done with what it read there), adding one per copy to `loaded_flag`.
// Clobbers r1..r3, r27, r29..r31.
void FetchChunk(StreamAsm& s, const DotOperand& x, int parity, int row_reg, int col_reg,
                int64_t rows, int64_t cols, int loaded_flag);

// Waits for the chunk's copies on `loaded_flag`, then packs staging buffer `parity` into
// packed buffer `parity` as bf16. Clobbers r1..r6, r20..r27, r29..r31, SMEM [0, 8), v0..v31.
void PackChunk(StreamAsm& s, const DotOperand& x, int parity, int64_t rows, int64_t cols,
               int loaded_flag);

}  // namespace tpusim::lowering
