// Data movement as strided DMA, HBM -> HBM. Every output element of copy, transpose, slice,
// reverse and broadcast, and of each operand's part of concatenate and pad, is one input
// element at an address affine in the output index: such a move collapses into copies shaped
// by the DMA's 3-D descriptors (planes x rows x row bytes), and up to two outer dimensions
// loop in scalar registers, so the code does not grow with the shape. Values are exact.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpusim::lowering {

struct StridedMove {
  std::vector<int64_t> dims;  // the block moved, outermost first
  std::vector<int64_t> src_strides,
      dst_strides;            // bytes per index step; src 0 repeats, < 0 reverses
  uint64_t src = 0, dst = 0;  // addresses of the element at index 0
  int64_t elem_bytes = 4;
  // Registers (r12 and up) whose run-time values are added to src and dst (0: none): a
  // dynamic slice's offset, computed before the kernel.
  int src_reg = 0, dst_reg = 0;
};

// The output filled with one 4-byte value first (pad, a constant loop state): a seed of the
// value, then copies that double the filled prefix. The seed is a vreg of the immediate (or
// bit pattern) written to VMEM, or the scalar at an HBM address copied element by element.
struct MoveFill {
  std::optional<float> immediate;
  uint64_t value = 0;  // HBM address of the scalar when there is no immediate
  uint64_t dst = 0;
  int64_t bytes = 0;
  std::optional<uint32_t> bits;  // the 4-byte pattern of every word, when there is no immediate
};

// The VMEM a move kernel uses at most: an immediate fill's block at offset 0 (the moves
// themselves go HBM to HBM).
int64_t MoveKernelVmemBytes();

// Descriptor-shaped copies of one move: `outer` dimensions (at most two) are loops.
struct MovePlan {
  int64_t planes = 1, rows = 1, row_bytes = 0;
  int64_t src_row = 0, dst_row = 0, src_plane = 0, dst_plane = 0;
  std::vector<int64_t> outer, outer_src, outer_dst;
  int64_t copies() const;
};

// Collapses `move` into a plan; throws std::invalid_argument when a copy would not be
// 4-byte aligned (2-byte elements moved one by one) or more than two outer loops remain.
MovePlan PlanMove(const StridedMove& move);

// The kernel: the fill (if any), then every move, then a wait for all copies.
std::string MoveKernel(const std::vector<StridedMove>& moves, const MoveFill* fill,
                       const std::string& tag);

}  // namespace tpusim::lowering
