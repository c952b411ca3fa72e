#include "compiler/lowering/conv/conv_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tpusim::lowering {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

void Require(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument("convolution kernel: " + why);
}

void Validate(const ConvShape& s) {
  Require(s.batch > 0 && s.h > 0 && s.w > 0 && s.cin > 0 && s.cout > 0 && s.kh > 0 && s.kw > 0,
          "batch, spatial sizes, channels and kernel sizes must be positive");
  Require(s.stride > 0 && s.pad_lo >= 0 && s.pad_hi >= 0, "needs stride > 0 and padding >= 0");
  Require(s.h + s.pad_lo + s.pad_hi >= s.kh && s.w + s.pad_lo + s.pad_hi >= s.kw,
          "the kernel is larger than the padded input");
  Require(std::max(s.pad_lo, s.pad_hi) < std::min(s.kh, s.kw),
          "padding " + std::to_string(s.pad_lo) + "+" + std::to_string(s.pad_hi) +
              " must be below the kernel size on each side (every output line sees a tap row)");
  Require(s.mxus == 1 || s.mxus == 2, "plans for 1 or 2 MXUs per core");
  Require(s.stride == 1 || s.w % s.stride == 0,
          "the input width " + std::to_string(s.w) + " must be a multiple of the stride");
  Require(s.cout % 2 == 0 || s.kernel_f32 || s.kernel_oi,
          "DMA moves 4-byte words: a bf16 01io kernel needs an even cout");
  Require(!s.kernel_oi || s.cin % 2 == 0 || (s.input_f32 && s.kernel_f32),
          "a 01oi kernel with an odd cin needs f32 operands (bf16 rows are not 4-byte words)");
  Require(s.cin % 2 == 0 || s.input_f32 || (s.cin < kMxuEdge && s.stride % 2 == 0),
          "an odd cin (" + std::to_string(s.cin) +
              ") is supported below 128 channels with an even stride only (DMA moves 4-byte "
              "words; each column phase then has one alignment)");
  Require(s.input % 4 == 0 && s.kernel % 4 == 0 && s.output % 4 == 0,
          "HBM addresses must be 4-byte aligned");
  Require(!s.statistics || (s.output_bf16 && s.sum % 4 == 0 && s.sum_squares % 4 == 0),
          "output statistics need a bf16 output and 4-byte aligned vectors");
}

// Fills the chunking-dependent sizes of `p`; false if the chunk does not fit.
bool TryChunkAs(ConvPlan& p, int64_t imgs, int64_t band, bool split_cout) {
  const ConvShape& s = p.s;
  p.imgs = imgs, p.band = band, p.split_cout = split_cout;
  p.line = p.ow * imgs;
  p.mxus = split_cout ? s.mxus : std::min<int64_t>(s.mxus, p.line);
  p.part = split_cout ? p.line : CeilDiv(p.line, p.mxus);
  p.acc_line = RoundUp(p.part, 8);
  // Two accumulator halves alternate between cout blocks when a chunk fits in one; a
  // larger chunk reuses all rows, each line's next matmul waiting for that line's pop.
  if (band * p.acc_line > s.acc_rows) return false;
  p.acc_region = 2 * band * p.acc_line <= s.acc_rows ? s.acc_rows / 2 : 0;
  p.zero_rows_bytes =
      p.zero_init ? RoundUp(std::max(p.part, kMxuEdge) * kSlotBytes, kZeroBlockBytes) : 0;
  p.buffer_rows = p.fold ? band : (band - 1) * s.stride + s.kh;
  p.phase_rows = p.fold ? band : CeilDiv(p.buffer_rows, s.stride);
  p.row_bytes = p.phase_cols * imgs * kSlotBytes;
  p.slot_bytes = p.phase_rows * p.row_bytes;
  p.cin_block_bytes = p.slots * p.slot_bytes;
  p.in_buf_bytes = RoundUp(p.cinb * p.cin_block_bytes, kZeroBlockBytes);
  p.out_buf_bytes = RoundUp(p.blocks_per_step() * band * p.line * kAccRowBytes, kZeroBlockBytes);
  const int64_t base = p.weights + p.weight_bytes;
  p.in_buf[0] = base, p.in_buf[1] = base + p.in_buf_bytes;
  p.out_buf[0] = base + 2 * p.in_buf_bytes, p.out_buf[1] = p.out_buf[0] + p.out_buf_bytes;
  p.stage = p.out_buf[1] + p.out_buf_bytes;
  p.stage_bytes = s.input_f32 ? 2 * p.in_buf_bytes : 0;
  p.raw_base = p.stage + p.stage_bytes;
  p.raw_rows = p.raw ? (band - 1) * s.stride + s.kh : 0;
  p.raw_row = p.hbm_row_bytes() + 4;
  p.raw_image = p.raw_rows * p.raw_row;
  p.raw_bytes = p.raw ? RoundUp(imgs * p.raw_image, kZeroBlockBytes) : 0;
  p.zero_rows = p.raw_base + p.raw_bytes;
  p.stats = p.zero_rows + p.zero_rows_bytes;
  p.stats_bytes = s.statistics ? p.coutb * 2 * kZeroBlockBytes : 0;
  // Statistics read whole vregs of 8 rows: a block's rows must fill them.
  if (s.statistics && p.block_rows() % 8 != 0) return false;
  return p.stats + p.stats_bytes <= s.vmem_bytes &&
         p.in_buf[0] + p.weight_stage_bytes <= s.vmem_bytes;
}

// Cout blocks per MXU when parts of lines would leave weight loads exposed.
bool TryChunk(ConvPlan& p, int64_t imgs, int64_t band) {
  const int64_t m = p.s.mxus;
  if (m > 1 && p.coutb % m == 0 && CeilDiv(p.ow * imgs, m) < kMxuEdge &&
      TryChunkAs(p, imgs, band, true))
    return true;
  return TryChunkAs(p, imgs, band, false);
}

void PlanChunks(ConvPlan& p) {
  const ConvShape& s = p.s;
  bool found = false;
  for (int64_t imgs = s.batch; imgs >= 1 && !found; --imgs)
    found = s.batch % imgs == 0 && TryChunk(p, imgs, p.oh);
  for (int64_t band = p.oh - 1; band >= 1 && !found; --band)
    found = p.oh % band == 0 && TryChunk(p, 1, band);
  Require(found, "no chunk of output rows fits " + std::to_string(s.vmem_bytes) +
                     " bytes of VMEM next to " + std::to_string(p.weight_bytes) +
                     " bytes of weights");
  p.bands = p.oh / p.band;
  p.chunks = s.batch / p.imgs * p.bands;
}

void PlanBands(ConvPlan& p) {
  const ConvShape& s = p.s;
  for (int64_t b = 0; b < p.bands; ++b) {
    const int64_t first_row = b * p.band * s.stride - s.pad_lo;  // input row of buffer row 0
    ConvBandKind k;
    k.row_lo = std::max<int64_t>(0, -first_row);
    k.row_hi = std::min((p.band - 1) * s.stride + s.kh, s.h - first_row);
    for (int64_t dy = 0; dy < s.kh; ++dy) {
      k.line_lo.push_back(std::max<int64_t>(0, CeilDiv(k.row_lo - dy, s.stride)));
      k.line_hi.push_back(std::min(p.band, CeilDiv(k.row_hi - dy, s.stride)));
    }
    auto same = [&](const ConvBandKind& o) { return o.row_lo == k.row_lo && o.row_hi == k.row_hi; };
    auto it = std::find_if(p.kinds.begin(), p.kinds.end(), same);
    p.band_kind.push_back(it - p.kinds.begin());
    if (it == p.kinds.end()) p.kinds.push_back(k);
  }
}

ConvTap PlanTap(const ConvPlan& p, int64_t dy, int64_t dx) {
  const ConvShape& s = p.s;
  ConvTap t;
  t.dy = dy, t.dx = dx, t.index = dy * s.kw + dx;
  const int64_t cx = dx - s.pad_lo, px = cx - FloorDiv(cx, s.stride) * s.stride;
  const int64_t phase = (dy % s.stride) * s.stride + px;
  t.slot = std::find(p.slot_phase.begin(), p.slot_phase.end(), phase) - p.slot_phase.begin();
  t.row_offset = dy / s.stride;
  t.column_offset = FloorDiv(cx, s.stride);
  t.channel_shift = s.cin % 2 && !s.input_f32 ? px % 2 : 0;
  // Output columns whose input column exists; positions are column * imgs + image.
  const int64_t x_lo = std::max<int64_t>(0, CeilDiv(-cx, s.stride));
  const int64_t x_hi = std::min(p.ow, FloorDiv(s.w - 1 - cx, s.stride) + 1);
  for (int64_t m = 0; m < p.mxus; ++m) {
    int64_t lo = std::max(x_lo * p.imgs, p.part_base(m));
    int64_t hi = std::min({x_hi * p.imgs, p.part_base(m) + p.part, p.line});
    t.first.push_back(lo);
    t.count.push_back(std::max<int64_t>(0, hi - lo));
  }
  return t;
}

// The one tap over a folded input: every position of every line.
ConvTap FoldedTap(const ConvPlan& p) {
  ConvTap t;
  for (int64_t m = 0; m < p.mxus; ++m) {
    t.first.push_back(p.part_base(m));
    t.count.push_back(std::min(p.part, p.line - p.part_base(m)));
  }
  return t;
}

}  // namespace

int64_t ConvPlan::copy_bytes(int64_t cb) const {
  if (fold) return fold_group * in_elem();
  if (s.cin % 2 && !s.input_f32) return RoundUp(s.cin * 2 + 2, 4);
  return std::min(kMxuEdge, s.cin - cb * kMxuEdge) * in_elem();
}

ConvPlan PlanConv(const ConvShape& shape) {
  Validate(shape);
  ConvPlan p;
  p.s = shape;
  const ConvShape& s = p.s;
  p.oh = ConvOutputSize(s);
  p.ow = (s.w + s.pad_lo + s.pad_hi - s.kw) / s.stride + 1;
  p.cinb = CeilDiv(s.cin, kMxuEdge), p.coutb = CeilDiv(s.cout, kMxuEdge);
  p.phase_cols = s.w / s.stride;
  p.weight_taps = s.kh * s.kw;
  const bool wide_fold = s.cin <= kFoldUpToCin && p.weight_taps <= kFoldUpToTaps && s.stride == 1;
  p.fold = p.weight_taps > 1 && (s.cin < kFoldBelowCin || wide_fold);
  p.zero_init = !p.fold && s.pad_lo + s.pad_hi >= std::min(s.kh, s.kw);
  // DMA moves 4-byte words: whole input rows only when a row is a number of them.
  p.raw = p.fold && !s.input_f32 && p.hbm_row_bytes() % 4 == 0;
  if (p.fold) {  // odd bf16 cin: one channel more, for the word-aligned copies
    p.fold_group = s.cin % 2 && !s.input_f32 ? s.cin + 1 : s.cin;
    p.cinb = CeilDiv(p.weight_taps, p.fold_taps_per_block());
    p.weight_taps = 1, p.phase_cols = p.ow;
  }
  for (int64_t dy = 0; dy < (p.fold ? 1 : s.kh); ++dy)
    for (int64_t dx = 0; dx < (p.fold ? 1 : s.kw); ++dx) {
      int64_t cx = dx - s.pad_lo, px = cx - FloorDiv(cx, s.stride) * s.stride;
      int64_t phase = p.fold ? 0 : (dy % s.stride) * s.stride + px;
      if (std::find(p.slot_phase.begin(), p.slot_phase.end(), phase) == p.slot_phase.end())
        p.slot_phase.push_back(phase);
    }
  std::sort(p.slot_phase.begin(), p.slot_phase.end());
  p.slots = static_cast<int64_t>(p.slot_phase.size());
  p.weight_bytes = p.coutb * p.weight_taps * p.cinb * kTileBytes;
  p.weight_stage_bytes = s.kernel_f32 ? 2 * p.cout_block_weight_bytes() : 0;
  if (s.cin % kMxuEdge || s.cout % kMxuEdge || p.zero_init) p.zero_block = 0;
  p.weights = p.needs_zero_fill() ? kZeroBlockBytes : 0;
  PlanChunks(p);
  PlanBands(p);
  if (p.fold) {
    p.taps.push_back(FoldedTap(p));
    return p;
  }
  p.taps.push_back(PlanTap(p, s.pad_lo, s.pad_lo));  // sees every output pixel
  for (int64_t dy = 0; dy < s.kh; ++dy)
    for (int64_t dx = 0; dx < s.kw; ++dx)
      if (dy != s.pad_lo || dx != s.pad_lo) p.taps.push_back(PlanTap(p, dy, dx));
  return p;
}

}  // namespace tpusim::lowering
