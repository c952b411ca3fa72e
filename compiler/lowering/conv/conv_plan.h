// The static plan of a convolution kernel (conv_kernel.h): how output pixels are chunked,
// where everything lives in VMEM, and what each kernel tap reads. Pure arithmetic, no
// assembly: conv_emit.cc turns a plan into the program.
//
// A chunk is `imgs` images x `band` output lines (a line is one output row of every image
// of the chunk). Its input rows, halo included, sit in VMEM as
//   [cin block][phase slot][row / stride][column / stride][image] x 256 bytes
// (a phase is (row % stride, column % stride); only phases some tap reads get a slot), so
// the pixels one tap needs for one line are consecutive 256-byte rows: one mxu.mma each.
// The MXUs share the work in one of two ways: each takes a part of every line's positions
// (column x image) with the same weights, or, when those parts would be shorter than a
// weight load (128 rows) and cout allows, each takes whole lines for its own cout block.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compiler/lowering/conv/conv_kernel.h"

namespace tpusim::lowering {

inline constexpr int64_t kMxuEdge = 128;                      // ISA: 128x128 MXU tiles
inline constexpr int64_t kSlotBytes = kMxuEdge * 2;           // one bf16 LHS row
inline constexpr int64_t kTileBytes = kMxuEdge * kSlotBytes;  // one bf16 weight tile
inline constexpr int64_t kAccRowBytes = kMxuEdge * 4;         // one popped f32 row
inline constexpr int64_t kFoldBelowCin = 16;  // fold taps into the contraction below this cin
// Stride 1, up to this cin and this many taps: 64 channels leave half of each 128-row
// weight tile idle, and two taps fill it (the 3x3 convolutions of ResNet's first stage, and
// their input gradients, 01oi kernels loaded transposed). The staged input holds a copy per tap, so
// larger windows stay unfolded (a 24x24 window over 25 channels, a weight gradient JAX writes as a
// convolution, ran 60x slower folded), and so do strided ones (conv_bn_relu.hlo's 3x3
// stride-2 over 64 channels ran 10% slower folded: its phases already skip the unused
// positions).
inline constexpr int64_t kFoldUpToCin = 64, kFoldUpToTaps = 9;
inline constexpr int64_t kZeroBlockBytes = 8 * kMxuEdge * 4;  // one vst of an f32[8,128] vreg

// One kernel tap and the part of a line each MXU computes for it.
struct ConvTap {
  int64_t dy = 0, dx = 0, index = 0;  // index = dy * kw + dx (weight tile order)
  int64_t slot = 0, row_offset = 0;   // phase slot; buffer rows / stride added to the line
  int64_t column_offset = 0;          // columns / stride added to the output column (< 0 ok)
  int64_t channel_shift = 0;          // odd cin: input channels sit one slot row lower
  std::vector<int64_t> first, count;  // per MXU: first line position, positions (0 = idle)
};

// Input rows a band holds and, per dy, the lines whose input row exists.
struct ConvBandKind {
  int64_t row_lo = 0, row_hi = 0;         // buffer rows [lo, hi) hold input rows
  std::vector<int64_t> line_lo, line_hi;  // per dy: lines [lo, hi) to compute
};

struct ConvPlan {
  ConvShape s;
  int64_t oh = 0, ow = 0, cinb = 0, coutb = 0, mxus = 0;
  int64_t imgs = 0, band = 0, bands = 0, chunks = 0;
  int64_t line = 0, part = 0, acc_line = 0;  // positions of a line, of an MXU's part; acc rows
  int64_t acc_region = 0;  // accumulator rows between the alternating regions (0: one region)
  int64_t buffer_rows = 0, phase_rows = 0, phase_cols = 0, slots = 0;
  std::vector<int64_t> slot_phase;                             // slot -> py * stride + px
  int64_t row_bytes = 0, slot_bytes = 0, cin_block_bytes = 0;  // VMEM input layout
  // VMEM byte addresses; zero_block < 0 when nothing needs zero-filling.
  int64_t zero_block = -1, weights = 0, in_buf[2] = {}, out_buf[2] = {};
  int64_t in_buf_bytes = 0, out_buf_bytes = 0, weight_bytes = 0;
  bool split_cout = false;  // MXUs take cout blocks (else parts of lines)
  // Tiny cin: the taps fold into the contraction. The input is then staged im2col-style,
  // each slot holding `fold_group` channels per tap, and one 1x1 tap reads it.
  bool fold = false;
  int64_t fold_group = 0;
  int64_t weight_taps = 0;    // taps in the weight layout (1 when folded)
  std::vector<ConvTap> taps;  // taps[0] writes every position of every line (mxu.mm)
  std::vector<ConvBandKind> kinds;
  std::vector<int64_t> band_kind;  // per band of an image
  // f32 operands: DMA lands them in a staging area laid out as their bf16 place with every
  // byte offset doubled, and the VPU rounds it into place (`stage`: the input's, after the
  // output buffers; the weights pass a cout block at a time through the area from in_buf[0]).
  int64_t stage = 0, stage_bytes = 0, weight_stage_bytes = 0;
  // Folded bf16 input: a chunk's input rows land once from HBM in the `raw` area (rows of
  // raw_row bytes, each after 4 zero bytes, raw_rows per image), and each tap's copies read
  // them there (VMEM to VMEM) instead of reading HBM once per tap.
  bool raw = false;
  int64_t raw_base = 0, raw_rows = 0, raw_row = 0, raw_image = 0, raw_bytes = 0;
  // Padding at least the kernel size: some output pixel sees no tap, so each cout step
  // first zeroes its accumulator rows with matmuls of zero rows (`zero_rows` in VMEM).
  bool zero_init = false;
  int64_t zero_rows = 0, zero_rows_bytes = 0;
  // s.statistics: per cout block, two f32[8,128] accumulators (sums, sums of squares) that
  // the VPU adds each drained block's vregs into; folded over sublanes at the end.
  int64_t stats = 0, stats_bytes = 0;
  int64_t in_elem() const { return s.input_f32 ? 4 : 2; }  // input bytes per element in HBM
  int64_t kernel_elem() const { return s.kernel_f32 ? 4 : 2; }
  int64_t in_scale() const { return s.input_f32 ? 2 : 1; }  // VMEM landing bytes per bf16 byte
  int64_t kernel_scale() const { return s.kernel_f32 ? 2 : 1; }
  int64_t cout_block_weight_bytes() const { return weight_taps * cinb * kTileBytes; }
  int64_t hbm_row_bytes() const { return s.w * s.cin * in_elem(); }
  int64_t hbm_image_bytes() const { return s.h * hbm_row_bytes(); }
  int64_t out_elem() const { return s.output_bf16 ? 2 : 4; }
  int64_t out_pixel_bytes() const { return s.cout * out_elem(); }
  // A popped row of 128 results as it goes out (rounded to bf16 in place, it halves).
  int64_t out_row_bytes() const { return kMxuEdge * out_elem(); }
  // Rows one cout block drains per cout step (band lines of every image).
  int64_t block_rows() const { return band * line; }
  // Bytes of cin block `cb` each input pixel copy moves (odd bf16 cin: with the shift).
  int64_t copy_bytes(int64_t cb) const;
  bool needs_zero_fill() const { return zero_block >= 0; }
  int64_t fold_taps_per_block() const { return kMxuEdge / fold_group; }
  // Cout blocks per step of the cout loop, and the steps.
  int64_t blocks_per_step() const { return split_cout ? mxus : 1; }
  int64_t cout_steps() const { return coutb / blocks_per_step(); }
  // MXU m's positions of a line start at line position part_base(m); it pops part_rows(m).
  int64_t part_base(int64_t m) const { return split_cout ? 0 : m * part; }
  int64_t part_rows(int64_t m) const { return split_cout ? line : std::min(part, line - m * part); }
  // Byte offset of MXU m's first popped row in an output buffer.
  int64_t out_offset(int64_t m) const {
    return (split_cout ? m * band * line : m * part) * kAccRowBytes;
  }
};

// Validates `shape` and plans it; throws std::invalid_argument saying why it cannot.
ConvPlan PlanConv(const ConvShape& shape);

}  // namespace tpusim::lowering
