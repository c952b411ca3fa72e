// The preamble of the convolution program: flags, band tables in SMEM, zero fills and
// the weight tiles, resident in VMEM for the whole run (f32 weights pass through the
// staging area a cout block at a time and the VPU rounds them to bf16).
#include <algorithm>
#include <string>
#include <vector>

#include "compiler/lowering/conv/conv_emit.h"

namespace tpusim::lowering::conv {
namespace {

// Zero-fills [dst, dst + bytes) from the zero block; the copy adds 1 to kZeroFill.
void ZeroFill(const ConvPlan& p, ConvAsm& a, int64_t dst, int64_t bytes) {
  const std::string desc = a.Desc({bytes / kZeroBlockBytes, kZeroBlockBytes, 0, kZeroBlockBytes});
  a.Li(kTmp, dst);
  a.Li(kTmp2, p.zero_block);
  a << "dma.vv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kZeroFill);
}

// One weight copy: VMEM side in the bf16 layout, offset from the cout block's first tile.
struct WeightCopy {
  DescShape desc;
  int64_t vmem_offset = 0;
  uint64_t hbm = 0;
};

// Tiles of cout block `co`: [tap][cin block], each 128 cin rows x 128 cout columns (01oi:
// 128 cout rows x 128 cin columns, loaded transposed; folded, taps x cin columns); odd bf16
// cin: a tap whose input channels sit one row lower gets its weights one row lower too.
std::vector<WeightCopy> WeightCopies(const ConvPlan& p, int64_t co) {
  const ConvShape& s = p.s;
  const int64_t e = p.kernel_elem(), tap_bytes = p.cinb * kTileBytes;
  const int64_t tap_hbm = s.cin * s.cout * e, cols = std::min(kMxuEdge, s.cout - co * kMxuEdge);
  std::vector<WeightCopy> copies;
  if (s.kernel_oi && p.fold) {  // tap t: cin columns from (t % per block) * fold_group
    for (int64_t t = 0; t < s.kh * s.kw; ++t) {
      const int64_t per = p.fold_taps_per_block();
      copies.push_back({{cols, s.cin * e, s.cin * e, kSlotBytes},
                        (t / per) * kTileBytes + (t % per) * p.fold_group * 2,
                        s.kernel + t * tap_hbm + co * kMxuEdge * s.cin * e});
    }
    return copies;
  }
  if (s.kernel_oi) {
    for (int64_t cb = 0; cb < p.cinb; ++cb) {
      const int64_t rows = std::min(kMxuEdge, s.cin - cb * kMxuEdge);
      copies.push_back({{cols, rows * e, s.cin * e, kSlotBytes, p.weight_taps, tap_hbm, tap_bytes},
                        cb * kTileBytes,
                        s.kernel + (co * kMxuEdge * s.cin + cb * kMxuEdge) * e});
    }
    return copies;
  }
  const uint64_t src = s.kernel + co * kMxuEdge * e;
  if (p.fold) {  // tap t: channel rows from (t % per block) * fold_group of block t / per block
    for (int64_t t = 0; t < s.kh * s.kw; ++t) {
      const int64_t dx = t % s.kw, per = p.fold_taps_per_block();
      const bool shifted = s.cin % 2 && !s.input_f32;
      const int64_t row = (t / per) * kMxuEdge + (t % per) * p.fold_group +
                          (shifted ? ((dx - s.pad_lo) % 2 + 2) % 2 : 0);
      copies.push_back(
          {{s.cin, cols * e, s.cout * e, kSlotBytes}, row * kSlotBytes, src + t * tap_hbm});
    }
    return copies;
  }
  const DescShape all{s.cin, cols * e, s.cout * e, kSlotBytes, p.weight_taps, tap_hbm, tap_bytes};
  if (s.cin % 2 == 0 || s.input_f32) return {{all, 0, src}};
  for (const ConvTap& t : p.taps) {
    DescShape one = all;
    one.planes = 1;
    copies.push_back(
        {one, t.index * tap_bytes + t.channel_shift * kSlotBytes, src + t.index * tap_hbm});
  }
  return copies;
}

// Issues `copies` of cout block `co` to `base` (scale 2: f32 into the staging area); each
// adds 1 to kSetup.
void IssueWeightCopies(ConvAsm& a, const std::vector<WeightCopy>& copies, int64_t base,
                       int64_t scale) {
  for (WeightCopy c : copies) {
    c.desc.dst_stride *= scale, c.desc.dst_plane_stride *= scale;
    a.Li(kTmp, base + c.vmem_offset * scale);
    a.Li(kTmp2, static_cast<int64_t>(c.hbm));
    a << "dma.hv " + R(kTmp) + ", " + R(kTmp2) + ", " + a.Desc(c.desc) + ", " + F(kSetup);
  }
}

// bf16 weights: straight into place (the zero fill of the tiles precedes them).
void EmitWeights(const ConvPlan& p, ConvAsm& a) {
  int64_t copies = 0;
  for (int64_t co = 0; co < p.coutb; ++co) {
    const std::vector<WeightCopy> c = WeightCopies(p, co);
    IssueWeightCopies(a, c, p.weights + co * p.cout_block_weight_bytes(), 1);
    copies += static_cast<int64_t>(c.size());
  }
  a << "wait seq, " + F(kSetup) + ", " + std::to_string(copies);
}

// f32 weights: per cout block, zero the staging area if tiles are partial, copy the block in,
// and let the VPU round it into place; the DMA waits for the VPU before reusing the area.
void EmitStagedWeights(const ConvPlan& p, ConvAsm& a) {
  const int64_t stage = p.in_buf[0], block = p.cout_block_weight_bytes();
  for (int64_t co = 0; co < p.coutb; ++co) {
    a << "wait dma, " + F(kStageFree) + ", 1";
    if (p.needs_zero_fill()) {
      ZeroFill(p, a, stage, 2 * block);
      a << "wait dma, " + F(kZeroFill) + ", 1";
    }
    const std::vector<WeightCopy> c = WeightCopies(p, co);
    IssueWeightCopies(a, c, stage, 2);
    a << "wait vpu, " + F(kSetup) + ", " + std::to_string(c.size());
    a.Li(kLineLo, p.weights + co * block);
    a.Li(kLineHi, stage);
    EmitRoundToBf16(a, kLineLo, kLineHi, kCount, block);
    a << "signal vpu, " + F(kStageFree) + ", 1";
  }
  a << "signal vpu, " + F(kConverted) + ", 1"
    << "wait seq, " + F(kConverted) + ", 1"
    << "wait dma, " + F(kStageFree) + ", 1"  // input fills and copies reuse the area
    << "signal dma, " + F(kStageFree) + ", 1";
}

// SMEM: band b at 8b holds (its kind's line table, kind index); a kind's line table
// holds (first line, end line) per dy.
void EmitTables(const ConvPlan& p, ConvAsm& a) {
  const int64_t table = 8 * p.bands, kh = p.s.kh;
  if (table + 8 * kh * static_cast<int64_t>(p.kinds.size()) > p.s.smem_bytes)
    throw std::invalid_argument("convolution kernel: band tables exceed SMEM");
  auto store = [&](int64_t addr, int64_t value) {
    a.Li(kTmp, value);
    a << "sst " + R(kTmp) + ", r0, " + std::to_string(addr);
  };
  for (int64_t b = 0; b < p.bands; ++b) {
    store(8 * b, table + 8 * kh * p.band_kind[b]);
    store(8 * b + 4, p.band_kind[b]);
  }
  for (size_t k = 0; k < p.kinds.size(); ++k)
    for (int64_t dy = 0; dy < kh; ++dy) {
      // Folded: the one tap computes every line (padding is zeros in the staged input).
      store(table + 8 * (k * kh + dy), p.fold ? 0 : p.kinds[k].line_lo[dy]);
      store(table + 8 * (k * kh + dy) + 4, p.fold ? p.band : p.kinds[k].line_hi[dy]);
    }
}

}  // namespace

void EmitRoundToBf16(ConvAsm& a, int dst, int src, int count, int64_t bf16_bytes, bool src_bf16) {
  constexpr int64_t kVregBf16Bytes = kZeroBlockBytes / 2;  // one f32[8,128] vreg as bf16
  a.Li(count, bf16_bytes / kVregBf16Bytes);
  a << "vloop " + R(count) + ", 2"
    << (src_bf16 ? "vlds.bf16 v0, " + R(src) + ", " + std::to_string(kVregBf16Bytes)
                 : "vlds v0, " + R(src) + ", " + std::to_string(kZeroBlockBytes))
    << "vsts.bf16 v0, " + R(dst) + ", " + std::to_string(kVregBf16Bytes);
}

void EmitPreamble(const ConvPlan& p, ConvAsm& a) {
  const int last = p.s.output_bf16 ? kOutRounded : kStageFree;
  for (int f = kInLoaded; f <= last; ++f) {
    const bool per_mxu_free = f == kInFree || f == kInFree + 1,
               out_free = f == kOutFree || f == kOutFree + 1;
    a << "sflag " + F(f) + ", " +
             std::to_string(per_mxu_free      ? 2
                            : out_free        ? p.blocks_per_step()
                            : f == kStageFree ? 1
                                              : 0);
  }
  a << "sflag " + F(kRawLoaded) + ", 0";
  EmitTables(p, a);
  if (p.needs_zero_fill()) {
    a << "vmovi v0, 0.0";
    a.Li(kTmp, p.zero_block);
    a << "vst v0, " + R(kTmp) << "signal vpu, " + F(kZeroFill) + ", 1"
      << "wait dma, " + F(kZeroFill) + ", 1";
  }
  if (p.s.kernel_f32) {
    EmitStagedWeights(p, a);
  } else {
    if (p.needs_zero_fill()) {
      ZeroFill(p, a, p.weights, p.weight_bytes);
      a << "wait dma, " + F(kZeroFill) + ", 1";
    }
    EmitWeights(p, a);
  }
  // Input-side zeros after the weights (f32 weights staged over this space).
  int fills = 0;
  if (p.s.cin % kMxuEdge || p.fold) {
    if (p.s.input_f32)
      ZeroFill(p, a, p.stage, p.stage_bytes);
    else
      ZeroFill(p, a, p.in_buf[0], 2 * p.in_buf_bytes);
    ++fills;
  }
  if (p.zero_init) ZeroFill(p, a, p.zero_rows, p.zero_rows_bytes), ++fills;
  if (p.raw) ZeroFill(p, a, p.raw_base, p.raw_bytes), ++fills;  // the zero bytes before rows
  if (fills) a << "wait dma, " + F(kZeroFill) + ", " + std::to_string(fills);  // before copies
}

}  // namespace tpusim::lowering::conv
