// Packs a row-major matrix from HBM into the MXU's VMEM operand layout on the hardware:
// DMA brings 128x128 blocks into a staging buffer, the VPU loads them (widening bf16),
// transposes them when the matrix is stored transposed (vxpose) and stores them rounded to
// bf16 (vst.bf16). Blocks at the edges are zero-filled first, so padding is exact zeros.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::lowering {

inline constexpr int64_t kPackEdge = 128;                              // MXU tile edge
inline constexpr int64_t kPackSublanes = 8;                            // rows of one vreg
inline constexpr int64_t kPackStageBytes = kPackEdge * kPackEdge * 4;  // one f32 block
inline constexpr int64_t kPackedRowBytes = kPackEdge * 2;              // one bf16 row of 128

// The logical matrix X[rows, cols]; in HBM row-major as X, or as X^T when `transposed`.
struct PackSource {
  uint64_t address = 0;  // HBM
  int64_t rows = 0, cols = 0;
  bool transposed = false;
  bool bf16 = false;  // element type in HBM (else f32)
};

// Destination: column-blocked bf16 at VMEM `base`: block cb (columns cb*128..) holds
// `padded_rows` rows of 128 bf16 (256 bytes) each, so element (r, c) lives at
// base + ((c / 128) * padded_rows + r) * 256 + (c % 128) * 2. padded_rows is a multiple
// of 8 and >= rows; columns pad to a multiple of 128.
struct PackTarget {
  uint64_t base = 0;
  int64_t padded_rows = 0;
};

// Bytes the packed matrix occupies in VMEM.
int64_t PackedBytes(const PackSource& src, int64_t padded_rows);

// Assembly that packs `src` (labels and descriptors prefixed with `id`). Uses the two f32
// staging buffers at VMEM `stage` (2 x kPackStageBytes), flags f0..f3 (left at 0), v0..v31
// and r1..r3. When it returns, every pack store has been issued to the VPU (follow with a
// VPU signal before other units read the result). Throws std::invalid_argument when DMA
// alignment (4 bytes) cannot be met (bf16 with an odd row length).
std::string PackKernel(const PackSource& src, const PackTarget& dst, uint64_t stage,
                       const std::string& id);

}  // namespace tpusim::lowering
