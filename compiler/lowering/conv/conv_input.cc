// The input copies of a chunk: HBM rows of NHWC pixels into the chunk's VMEM layout
// (conv_plan.h), only the rows a band holds and only the phases some tap reads.
#include <algorithm>
#include <string>

#include "compiler/lowering/conv/conv_emit.h"

namespace tpusim::lowering::conv {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

// Folded taps: for each tap, the input pixel of every output pixel whose input exists goes
// to that tap's channels of the output pixel's slot (one copy per image).
std::vector<InputCopy> FoldedCopies(const ConvPlan& p, int64_t kind) {
  const ConvShape& s = p.s;
  const int64_t st = s.stride, e = p.in_elem(), pixel = s.cin * e, row = p.hbm_row_bytes();
  std::vector<InputCopy> copies;
  for (int64_t dy = 0; dy < s.kh; ++dy)
    for (int64_t dx = 0; dx < s.kw; ++dx) {
      const int64_t t = dy * s.kw + dx, per = p.fold_taps_per_block();
      const int64_t l_lo = p.kinds[kind].line_lo[dy], l_hi = p.kinds[kind].line_hi[dy];
      const int64_t cx = dx - s.pad_lo;
      const int64_t x_lo = cx >= 0 ? 0 : (-cx + st - 1) / st;
      const int64_t x_hi = std::min(p.ow, cx > s.w - 1 ? 0 : (s.w - 1 - cx) / st + 1);
      if (l_hi <= l_lo || x_hi <= x_lo) continue;
      // odd bf16 cin: from the aligned word before
      const int64_t shift = s.cin % 2 && !s.input_f32 ? (cx % 2 + 2) % 2 : 0;
      const int64_t src = (l_lo * st + dy - s.pad_lo) * row + (x_lo * st + cx) * pixel - shift * e;
      const int64_t dst = (t / per) * p.cin_block_bytes + l_lo * p.row_bytes +
                          x_lo * p.imgs * kSlotBytes + (t % per) * p.fold_group * 2;
      const DescShape d{x_hi - x_lo, p.copy_bytes(0), st * pixel, p.imgs * kSlotBytes,
                        l_hi - l_lo, st * row,        p.row_bytes};
      // In the raw area: buffer row l * st + dy, after the row's 4 zero bytes.
      const int64_t raw = (l_lo * st + dy) * p.raw_row + 4 + (x_lo * st + cx) * pixel - shift * e;
      for (int64_t i = 0; i < p.imgs; ++i)
        copies.push_back({d, dst + i * kSlotBytes, src + i * p.hbm_image_bytes(),
                          raw + i * p.raw_image, st * p.raw_row});
    }
  return copies;
}

// f32 input: the copies land in the staging area, every VMEM offset and stride doubled.
std::vector<InputCopy> Staged(const ConvPlan& p, std::vector<InputCopy> copies) {
  for (InputCopy& c : copies) {
    c.vmem_offset *= p.in_scale();
    c.desc.dst_stride *= p.in_scale();
    c.desc.dst_plane_stride *= p.in_scale();
  }
  return copies;
}

}  // namespace

// Stride 1: a cin block's (row, column) pixels are one strided run in HBM, images are
// planes: one copy. Otherwise a phase's columns are every stride-th pixel: one copy per
// image (rows as planes) or per row (images as planes), whichever makes fewer.
std::vector<InputCopy> InputCopies(const ConvPlan& p, int64_t kind) {
  if (p.fold) return Staged(p, FoldedCopies(p, kind));
  const ConvShape& s = p.s;
  const ConvBandKind& k = p.kinds[kind];
  const int64_t st = s.stride, e = p.in_elem(), pixel = s.cin * e, row = p.hbm_row_bytes();
  const int64_t dst_pixel = p.imgs * kSlotBytes, image = p.hbm_image_bytes();
  std::vector<InputCopy> copies;
  for (int64_t cb = 0; cb < p.cinb; ++cb)
    for (int64_t slot = 0; slot < p.slots; ++slot) {
      const int64_t py = p.slot_phase[slot] / st, px = p.slot_phase[slot] % st;
      const int64_t first = std::max<int64_t>(0, CeilDiv(k.row_lo - py, st));
      const int64_t rows = std::min(p.phase_rows, CeilDiv(k.row_hi - py, st)) - first;
      if (rows <= 0) continue;
      // odd bf16 cin: from the aligned word before
      const int64_t shift = s.cin % 2 && !s.input_f32 ? px % 2 : 0;
      const int64_t src =
          (first * st + py - s.pad_lo) * row + px * pixel + cb * kMxuEdge * e - shift * e;
      const int64_t dst = cb * p.cin_block_bytes + slot * p.slot_bytes + first * p.row_bytes;
      const int64_t bytes = p.copy_bytes(cb);
      if (st == 1) {
        copies.push_back(
            {{rows * p.phase_cols, bytes, pixel, dst_pixel, p.imgs, image, kSlotBytes}, dst, src});
      } else if (p.imgs <= rows) {
        for (int64_t i = 0; i < p.imgs; ++i)
          copies.push_back(
              {{p.phase_cols, bytes, st * pixel, dst_pixel, rows, st * row, p.row_bytes},
               dst + i * kSlotBytes,
               src + i * image});
      } else {
        for (int64_t r = 0; r < rows; ++r)
          copies.push_back({{p.phase_cols, bytes, st * pixel, dst_pixel, p.imgs, image, kSlotBytes},
                            dst + r * p.row_bytes,
                            src + r * st * row});
      }
    }
  return Staged(p, copies);
}

void EmitRawCopy(const ConvPlan& p, ConvAsm& a, int64_t kind) {
  const ConvBandKind& k = p.kinds[kind];
  const int64_t row = p.hbm_row_bytes();
  a.Li(kTmp, p.raw_base + k.row_lo * p.raw_row + 4);
  a.AddImm(kTmp2, kNextSrc, (k.row_lo - p.s.pad_lo) * row);
  a << "dma.hv " + R(kTmp) + ", " + R(kTmp2) + ", " +
           a.Desc({k.row_hi - k.row_lo, row, row, p.raw_row, p.imgs, p.hbm_image_bytes(),
                   p.raw_image}) +
           ", " + F(kRawLoaded)
    << "wait dma, " + F(kRawLoaded) + ", 1";
}

void EmitInputCopies(const ConvPlan& p, ConvAsm& a, int64_t kind, int64_t group, int64_t groups) {
  const std::vector<InputCopy> copies = InputCopies(p, kind);
  const int64_t n = static_cast<int64_t>(copies.size());
  for (int64_t i = n * group / groups; i < n * (group + 1) / groups; ++i) {
    const InputCopy& c = copies[i];
    if (p.raw) {
      DescShape d = c.desc;
      d.src_plane_stride = c.raw_plane;
      a.AddImm(kTmp, kInNext, c.vmem_offset);
      a.Li(kTmp2, p.raw_base + c.raw_offset);
      a << "dma.vv " + R(kTmp) + ", " + R(kTmp2) + ", " + a.Desc(d) + ", " + F(kInLoaded);
      continue;
    }
    const std::string desc = a.Desc(c.desc);
    if (p.s.input_f32)
      a.Li(kTmp, p.stage + c.vmem_offset);
    else
      a.AddImm(kTmp, kInNext, c.vmem_offset);
    a.AddImm(kTmp2, kNextSrc, c.hbm_offset);
    a << "dma.hv " + R(kTmp) + ", " + R(kTmp2) + ", " + desc + ", " + F(kInLoaded);
  }
}

}  // namespace tpusim::lowering::conv
