// The copies of one block of the weight-gradient kernel: X rows with the halo per cin block
// (or, folded, one strided copy per tap into its columns of every position's row, clipped
// where the tap reads padding) and dY transposed per cout block, all as f32 into staging.
#include <algorithm>
#include <string>

#include "compiler/lowering/conv/conv_wgrad_emit.h"

namespace tpusim::lowering::wgrad {
namespace {

// Folded: the copies of FoldedCopies, each into its taps' columns of the rows.
void EmitFoldedCopies(const Plan& p, ConvAsm& a, int64_t first, int64_t lines, int flag,
                      int64_t& issued) {
  const WeightGradShape& s = p.s;
  const int64_t d = s.dilation, px = s.cin * 4;
  for (const FoldCopy& c : FoldedCopies(p, first, lines)) {
    const int64_t t = c.ky0 * p.kw + c.kx0;
    a.AddImm(
        kT1, kNext,
        c.cb * p.sx_cb + (c.y0 * p.grid_w + c.x0) * kPixelBytes + (t - p.first_tap(c.cb)) * px);
    if (c.zero) {  // from the zero tile, a stride of 0
      a.Li(kT2, p.zero);
      a << "dma.vv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({c.x1 - c.x0, (c.kx1 - c.kx0) * px, 0, kPixelBytes, c.y1 - c.y0, 0,
                       p.grid_w * kPixelBytes}) +
               ", " + F(flag);
      ++issued;
      continue;
    }
    // X row d * line + ky - pad_lo, column d * x + kx - pad_lo (kXSrc: row d * first).
    a.AddImm(kT2, kXSrc, ((d * c.y0 + c.ky0 - s.pad_lo) * s.w + d * c.x0 + c.kx0 - s.pad_lo) * px);
    // Rows: the positions of one tap row, or the tap rows of one position.
    const bool by_ky = c.ky1 - c.ky0 > 1;
    a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
             a.Desc({by_ky ? c.ky1 - c.ky0 : c.x1 - c.x0, (c.kx1 - c.kx0) * px,
                     by_ky ? s.w * px : d * px, by_ky ? p.kw * px : kPixelBytes, c.y1 - c.y0,
                     d * s.w * px, p.grid_w * kPixelBytes}) +
             ", " + F(flag);
    ++issued;
  }
}

// Copies of a block of `lines` lines starting at image line `first` (< 0: a middle block).
void EmitCopies(const Plan& p, ConvAsm& a, int64_t first, int64_t lines, int flag) {
  const WeightGradShape& s = p.s;
  int64_t issued = 0;
  if (p.fold) {
    EmitFoldedCopies(p, a, first, lines, flag, issued);
  } else {
    for (int64_t cb = 0; cb < p.cinb; ++cb) {
      a.AddImm(kT1, kNext, cb * p.sx_cb);
      a.AddImm(kT2, kXSrc, p.cin_row0(cb) * 4);
      a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({s.w, p.cin_rows(cb) * 4, s.cin * 4, kPixelBytes, lines + p.kh - 1,
                       s.w * s.cin * 4, s.w * kPixelBytes}) +
               ", " + F(flag);
      ++issued;
    }
  }
  // dY lands transposed, [cout][position] (4-byte rows): one copy per cout block when the
  // lines are contiguous positions (grid_w == wo), else one per line; a short block
  // signals the copies it leaves out, so every block adds the same count.
  const bool whole = p.grid_w == s.wo;
  auto copy = [&](int64_t c, int64_t co, int64_t first_line, int64_t n_lines) {
    const int64_t r = first_line - c * p.rows;
    a.AddImm(kT1, kNext, p.sd + (c * p.coutb + co) * kStageTileBytes + r * p.grid_w * 4);
    a.AddImm(kT2, kDySrc, (first_line * s.wo * s.cout + (p.cout_lo + co) * kMxuEdge) * 4);
    a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
             a.Desc({n_lines * s.wo, 4, s.cout * 4, 4, p.cout_rows(co), 4, kPixelBytes}) + ", " +
             F(flag);
    ++issued;
  };
  for (int64_t co = 0; p.stack_h && co < p.coutb; ++co) {
    // Stacked: each image's valid lines, split where they cross into the next K tile.
    for (const auto& [l, end] : p.stacked_runs(lines)) {
      const int64_t c = l / p.rows;
      const int64_t y = l / p.stack_h * p.stack_ho + l % p.stack_h;  // line of the block's dY
      a.AddImm(kT1, kNext,
               p.sd + (c * p.coutb + co) * kStageTileBytes + (l % p.rows) * p.grid_w * kPixelBytes);
      a.AddImm(kT2, kDySrc, (y * s.wo * s.cout + (p.cout_lo + co) * kMxuEdge) * 4);
      a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({s.wo, p.cout_rows(co) * 4, s.cout * 4, kPixelBytes, end - l,
                       s.wo * s.cout * 4, p.grid_w * kPixelBytes}) +
               ", " + F(flag);
      ++issued;
    }
  }
  for (int64_t co = 0; p.dy_rows && !p.stack_h && co < p.coutb; ++co) {
    // Rows [position][cout]: the block's lines at once when a tile is one line.
    for (int64_t c = 0; c < (p.rows == 1 ? 1 : p.chunks); ++c) {
      const int64_t l0 = c * p.rows;
      const int64_t nl = p.rows == 1 ? lines : std::clamp<int64_t>(lines - l0, 0, p.rows);
      if (nl <= 0) continue;
      a.AddImm(kT1, kNext, p.sd + (c * p.coutb + co) * kStageTileBytes);
      a.AddImm(kT2, kDySrc, (l0 * s.wo * s.cout + (p.cout_lo + co) * kMxuEdge) * 4);
      a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({s.wo, p.cout_rows(co) * 4, s.cout * 4, kPixelBytes, nl, s.wo * s.cout * 4,
                       p.rows == 1 ? p.coutb * kStageTileBytes : s.wo * kPixelBytes}) +
               ", " + F(flag);
      ++issued;
    }
  }
  for (int64_t co = 0; !p.dy_rows && co < p.coutb; ++co)
    for (int64_t c = 0; c < p.chunks; ++c) {
      const int64_t n = std::clamp<int64_t>(lines - c * p.rows, 0, p.rows);
      if (whole && n > 0) copy(c, co, c * p.rows, n);
      for (int64_t l = 0; !whole && l < n; ++l) copy(c, co, c * p.rows + l, 1);
    }
  if (p.copies() > issued)
    a << "signal dma, " + F(flag) + ", " + std::to_string(p.copies() - issued);
}

}  // namespace

void EmitNextBlock(const Plan& p, ConvAsm& a, int flag) {
  const WeightGradShape& s = p.s;
  a << "wait dma, " + F(kStageFree) + ", 1";
  // Block kinds: the first (clipped at the top when folded with padding), the last (tail
  // lines, clipped at the bottom), the ones between.
  const int64_t last_first = (p.blocks - 1) * p.lines();
  if (p.blocks == 1 || (!p.clipped && p.tail == p.lines())) {
    EmitCopies(p, a, p.clipped ? 0 : -1, p.blocks == 1 ? p.tail : p.lines(), flag);
  } else {
    const std::string tail = a.NewLabel("tail"), head = a.NewLabel("head"),
                      copied = a.NewLabel("copied");
    a.Li(kT3, p.blocks - 1);
    a << "beq " + R(kRow) + ", " + R(kT3) + ", " + tail;
    if (p.clipped) a << "beq " + R(kRow) + ", r0, " + head;
    EmitCopies(p, a, -1, p.lines(), flag);
    a << "jmp " + copied;
    a.Label(tail);
    EmitCopies(p, a, p.clipped ? last_first : -1, p.tail, flag);
    if (p.clipped) {
      a << "jmp " + copied;
      a.Label(head);
      EmitCopies(p, a, 0, p.lines(), flag);
    }
    a.Label(copied);
  }
  a.AddImm(kXSrc, kXSrc, p.lines() * p.x_line_bytes());
  a.AddImm(kDySrc, kDySrc, p.dy_block_bytes());
  a << "addi " + R(kRow) + ", " + R(kRow) + ", 1";
  const std::string same = a.NewLabel("same_image");
  a.Li(kT1, p.blocks);
  a << "blt " + R(kRow) + ", " + R(kT1) + ", " + same << "li " + R(kRow) + ", 0";
  a.AddImm(kXSrc, kXSrc, s.h * s.w * s.cin * 4 - p.blocks * p.lines() * p.x_line_bytes());
  a.AddImm(kDySrc, kDySrc,
           p.stack_h ? 0 : (s.ho - p.blocks * p.lines()) * s.wo * s.cout * 4);  // one image
  a.Label(same);
}

}  // namespace tpusim::lowering::wgrad
