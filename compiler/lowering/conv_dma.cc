// Data movement of the convolution program: the preamble (zero fills, weight tiles, band
// tables) and the input copies of a chunk into its VMEM layout (conv_plan.h).
#include <algorithm>
#include <string>

#include "compiler/lowering/conv_emit.h"

namespace tpusim::lowering::conv {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

// Zero-fills [dst, dst + bytes) from the zero block; the copy adds 1 to kZeroFill.
void ZeroFill(const ConvPlan& p, ConvAsm& a, int64_t dst, int64_t bytes) {
  const std::string desc = a.Desc({bytes / 4096, 4096, 0, 4096});
  a.Li(kTmp, dst);
  a.Li(kTmp2, p.zero_block);
  a << "dma.vv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kZeroFill);
}

// Weight tiles [cout block][tap][cin block], each 128 cin rows x 128 cout columns; odd
// cin: a tap whose input channels sit one row lower gets its weights one row lower too.
int64_t EmitWeightCopies(const ConvPlan& p, ConvAsm& a) {
  const ConvShape& s = p.s;
  const int64_t taps = s.kh * s.kw, tap_bytes = p.cinb * kTileBytes;
  int64_t copies = 0;
  for (int64_t co = 0; co < p.coutb; ++co) {
    const int64_t cols = std::min(kMxuEdge, s.cout - co * kMxuEdge);
    const uint64_t src = s.kernel + co * kMxuEdge * 2;
    const int64_t dst = p.weights + co * taps * tap_bytes;
    auto copy = [&](int64_t first_tap, int64_t n_taps, int64_t shift) {
      a.Li(kTmp, dst + first_tap * tap_bytes + shift * kSlotBytes);
      a.Li(kTmp2, static_cast<int64_t>(src + first_tap * s.cin * s.cout * 2));
      const std::string desc =
          a.Desc({s.cin, cols * 2, s.cout * 2, kSlotBytes, n_taps, s.cin * s.cout * 2, tap_bytes});
      a << "dma.hv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kSetup);
      ++copies;
    };
    if (s.cin % 2 == 0) {
      copy(0, taps, 0);
      continue;
    }
    for (const ConvTap& t : p.taps) copy(t.index, 1, t.channel_shift);
  }
  return copies;
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
      store(table + 8 * (k * kh + dy), p.kinds[k].line_lo[dy]);
      store(table + 8 * (k * kh + dy) + 4, p.kinds[k].line_hi[dy]);
    }
}

// Calls `copy(cb, slot, first phase row, phase rows)` for every copy group of `kind`.
template <typename Fn>
void ForEachCopy(const ConvPlan& p, int64_t kind, Fn copy) {
  const ConvBandKind& k = p.kinds[kind];
  const int64_t st = p.s.stride;
  for (int64_t cb = 0; cb < p.cinb; ++cb)
    for (int64_t slot = 0; slot < p.slots; ++slot) {
      const int64_t py = p.slot_phase[slot] / st;
      const int64_t lo = std::max<int64_t>(0, CeilDiv(k.row_lo - py, st));
      const int64_t hi = std::min(p.phase_rows, CeilDiv(k.row_hi - py, st));
      if (hi > lo) copy(cb, slot, lo, hi - lo);
    }
}

}  // namespace

void EmitPreamble(const ConvPlan& p, ConvAsm& a) {
  for (int f = kInLoaded; f <= kSetup; ++f) {
    bool per_mxu_free = f == kInFree || f == kInFree + 1,
         out_free = f == kOutFree || f == kOutFree + 1;
    a << "sflag " + F(f) + ", " + std::to_string(per_mxu_free ? 2 : out_free ? 1 : 0);
  }
  a.Li(kOne, 1);
  EmitTables(p, a);
  if (p.needs_zero_fill()) {
    a << "vmovi v0, 0.0";
    a.Li(kTmp, p.zero_block);
    a << "vst v0, " + R(kTmp) << "signal vpu, " + F(kZeroFill) + ", 1"
      << "wait dma, " + F(kZeroFill) + ", 1";
    ZeroFill(p, a, p.weights, p.weight_bytes);
    int fills = 1;
    if (p.s.cin % kMxuEdge) ZeroFill(p, a, p.in_buf[0], 2 * p.in_buf_bytes), ++fills;
    a << "wait dma, " + F(kZeroFill) + ", " + std::to_string(fills);  // fills before copies
  }
  const int64_t copies = EmitWeightCopies(p, a);
  a << "wait seq, " + F(kSetup) + ", " + std::to_string(copies);
}

int64_t InputCopies(const ConvPlan& p, int64_t kind) {
  int64_t n = 0;
  ForEachCopy(p, kind,
              [&](int64_t, int64_t, int64_t, int64_t) { n += p.s.stride > 1 ? p.imgs : 1; });
  return n;
}

int64_t EmitInputCopies(const ConvPlan& p, ConvAsm& a, int64_t kind) {
  const ConvShape& s = p.s;
  const int64_t st = s.stride, pixel = s.cin * 2, row = p.hbm_row_bytes();
  const int64_t dst_pixel = p.imgs * kSlotBytes;
  ForEachCopy(p, kind, [&](int64_t cb, int64_t slot, int64_t first, int64_t rows) {
    const int64_t py = p.slot_phase[slot] / st, px = p.slot_phase[slot] % st;
    const int64_t shift = s.cin % 2 ? px % 2 : 0;
    const int64_t src =
        (first * st + py - s.pad_lo) * row + px * pixel + cb * kSlotBytes - shift * 2;
    const int64_t dst = cb * p.cin_block_bytes + slot * p.slot_bytes + first * p.row_bytes;
    const int64_t bytes = p.copy_bytes(cb);
    // Stride 1: (row, column) is one run of pixels, images are planes. Otherwise one copy
    // per image: rows are planes, a phase's columns are the rows.
    const DescShape d =
        st == 1
            ? DescShape{rows * p.phase_cols, bytes,     pixel, dst_pixel, p.imgs,
                        p.hbm_image_bytes(), kSlotBytes}
            : DescShape{p.phase_cols, bytes, st * pixel, dst_pixel, rows, st * row, p.row_bytes};
    const std::string desc = a.Desc(d);
    for (int64_t img = 0; img < (st == 1 ? 1 : p.imgs); ++img) {
      a.AddImm(kTmp, kInNext, dst + img * kSlotBytes);
      a.AddImm(kTmp2, kNextSrc, src + img * p.hbm_image_bytes());
      a << "dma.hv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kInLoaded);
    }
  });
  return InputCopies(p, kind);
}

}  // namespace tpusim::lowering::conv
