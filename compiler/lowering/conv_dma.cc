// The preamble of the convolution program: flags, band tables in SMEM, zero fills and
// the weight tiles, resident in VMEM for the whole run.
#include <algorithm>
#include <string>

#include "compiler/lowering/conv_emit.h"

namespace tpusim::lowering::conv {
namespace {

// Zero-fills [dst, dst + bytes) from the zero block; the copy adds 1 to kZeroFill.
void ZeroFill(const ConvPlan& p, ConvAsm& a, int64_t dst, int64_t bytes) {
  const std::string desc = a.Desc({bytes / kZeroBlockBytes, kZeroBlockBytes, 0, kZeroBlockBytes});
  a.Li(kTmp, dst);
  a.Li(kTmp2, p.zero_block);
  a << "dma.vv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kZeroFill);
}

// Weight tiles [cout block][tap][cin block], each 128 cin rows x 128 cout columns; odd
// cin: a tap whose input channels sit one row lower gets its weights one row lower too.
int64_t EmitWeightCopies(const ConvPlan& p, ConvAsm& a) {
  const ConvShape& s = p.s;
  const int64_t taps = p.weight_taps, tap_bytes = p.cinb * kTileBytes;
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
    if (p.fold) {  // tap t: channel rows from (t % per block) * fold_group of block t / per block
      for (int64_t t = 0; t < s.kh * s.kw; ++t) {
        const int64_t dx = t % s.kw, per = p.fold_taps_per_block();
        const int64_t row = (t / per) * kMxuEdge + (t % per) * p.fold_group +
                            (s.cin % 2 ? ((dx - s.pad_lo) % 2 + 2) % 2 : 0);
        a.Li(kTmp, dst + row * kSlotBytes);
        a.Li(kTmp2, static_cast<int64_t>(src + t * s.cin * s.cout * 2));
        const std::string desc = a.Desc({s.cin, cols * 2, s.cout * 2, kSlotBytes});
        a << "dma.hv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kSetup);
        ++copies;
      }
      continue;
    }
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
      // Folded: the one tap computes every line (padding is zeros in the staged input).
      store(table + 8 * (k * kh + dy), p.fold ? 0 : p.kinds[k].line_lo[dy]);
      store(table + 8 * (k * kh + dy) + 4, p.fold ? p.band : p.kinds[k].line_hi[dy]);
    }
}

}  // namespace

void EmitPreamble(const ConvPlan& p, ConvAsm& a) {
  for (int f = kInLoaded; f <= kSetup; ++f) {
    bool per_mxu_free = f == kInFree || f == kInFree + 1,
         out_free = f == kOutFree || f == kOutFree + 1;
    a << "sflag " + F(f) + ", " +
             std::to_string(per_mxu_free ? 2
                            : out_free   ? p.blocks_per_step()
                                         : 0);
  }
  EmitTables(p, a);
  if (p.needs_zero_fill()) {
    a << "vmovi v0, 0.0";
    a.Li(kTmp, p.zero_block);
    a << "vst v0, " + R(kTmp) << "signal vpu, " + F(kZeroFill) + ", 1"
      << "wait dma, " + F(kZeroFill) + ", 1";
    ZeroFill(p, a, p.weights, p.weight_bytes);
    int fills = 1;
    if (p.s.cin % kMxuEdge || p.fold) ZeroFill(p, a, p.in_buf[0], 2 * p.in_buf_bytes), ++fills;
    a << "wait dma, " + F(kZeroFill) + ", " + std::to_string(fills);  // fills before copies
  }
  const int64_t copies = EmitWeightCopies(p, a);
  a << "wait seq, " + F(kSetup) + ", " + std::to_string(copies);
}

}  // namespace tpusim::lowering::conv
