// The copies of one block of the weight-gradient kernel: X rows with the halo per cin block
// (or, folded, one strided copy per tap into its columns of every position's row, clipped
// where the tap reads padding) and dY transposed per cout block, all as f32 into staging.
#include <algorithm>
#include <string>
#include <utility>

#include "compiler/lowering/conv/conv_wgrad_emit.h"

namespace tpusim::lowering::wgrad {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

// Folded: the copies of FoldedCopies, each into its taps' columns of the rows.
void EmitFoldedCopies(const Plan& p, ConvAsm& a, int64_t first, int64_t lines, int flag,
                      int64_t& issued) {
  const WeightGradShape& s = p.s;
  const int64_t d = s.dilation, px = s.cin * p.elem(), pitch = p.pitch();
  for (const FoldCopy& c : FoldedCopies(p, first, lines)) {
    const int64_t t = c.ky0 * p.kw + c.kx0;
    a.AddImm(kT1, kNext,
             c.cb * p.sx_cb + (c.y0 * p.grid_w + c.x0) * pitch + (t - p.first_tap(c.cb)) * px);
    if (c.zero) {  // from the zero tile, a stride of 0
      a.Li(kT2, p.zero);
      a << "dma.vv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({c.x1 - c.x0, (c.kx1 - c.kx0) * px, 0, pitch, c.y1 - c.y0, 0,
                       p.grid_w * pitch}) +
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
                     by_ky ? s.w * px : d * px, by_ky ? p.kw * px : pitch, c.y1 - c.y0,
                     d * s.w * px, p.grid_w * pitch}) +
             ", " + F(flag);
    ++issued;
  }
}

// Copies of a block of `lines` lines starting at image line `first` (< 0: a middle block).
void EmitCopies(const Plan& p, ConvAsm& a, int64_t first, int64_t lines, int flag) {
  const WeightGradShape& s = p.s;
  const int64_t e = p.elem();
  int64_t issued = 0;
  if (p.fold) {
    EmitFoldedCopies(p, a, first, lines, flag, issued);
  } else if (p.stack_x_h) {  // each image's X rows below its padding rows
    const int64_t hp = p.stack_h, row_pixels = p.grid_w * p.pitch();
    for (int64_t j = 0; j < CeilDiv(lines, hp); ++j)
      for (int64_t cb = 0; cb < p.cinb; ++cb) {
        a.AddImm(kT1, kNext,
                 cb * p.sx_cb + (j * hp + s.pad_lo) * row_pixels + s.pad_lo * p.pitch());
        a.AddImm(kT2, kXSrc, j * p.stack_x_h * s.w * s.cin * e + p.cin_row0(cb) * e);
        a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
                 a.Desc({s.w, p.cin_rows(cb) * e, s.cin * e, p.pitch(), p.stack_x_h,
                         s.w * s.cin * e, row_pixels}) +
                 ", " + F(flag);
        ++issued;
      }
  } else {
    // Phase (py, px), staged row r, column j: X row d (first line + r) + py - pad_lo,
    // column d j + px - pad_lo, where they lie inside X; the columns outside stay zero, and
    // the first and last block of an image zero the rows outside (an earlier block wrote
    // them). Middle blocks hold X rows only (MakePlan checks).
    const int64_t d = s.dilation, row_pixels = p.grid_w * p.pitch();
    for (int64_t py = 0; py < p.phy; ++py)
      for (int64_t px = 0; px < p.phx; ++px) {
        const int64_t staged = lines + CeilDiv(p.kh - py, d) - 1;
        const int64_t j0 = std::max<int64_t>(0, CeilDiv(s.pad_lo - px, d));
        const int64_t j1 = std::min(p.grid_w, FloorDiv(s.w - 1 + s.pad_lo - px, d) + 1);
        int64_t r0 = 0, r1 = staged;
        if (first >= 0) {
          r0 = std::clamp<int64_t>(CeilDiv(s.pad_lo - py, d) - first, 0, staged);
          r1 = std::clamp<int64_t>(FloorDiv(s.h - 1 + s.pad_lo - py, d) + 1 - first, r0, staged);
        }
        const int64_t slot = (py * p.phx + px) * p.pixels * p.pitch();
        for (int64_t cb = 0; cb < p.cinb; ++cb) {
          if (r1 > r0 && j1 > j0) {
            a.AddImm(kT1, kNext, cb * p.sx_cb + slot + (r0 * p.grid_w + j0) * p.pitch());
            a.AddImm(kT2, kXSrc,
                     ((d * r0 + py - s.pad_lo) * s.w + d * j0 + px - s.pad_lo) * s.cin * e +
                         p.cin_row0(cb) * e);
            a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
                     a.Desc({j1 - j0, p.cin_rows(cb) * e, d * s.cin * e, p.pitch(), r1 - r0,
                             d * s.w * s.cin * e, row_pixels}) +
                     ", " + F(flag);
            ++issued;
          }
          for (const auto& [z0, z1] : {std::pair{int64_t{0}, r0}, std::pair{r1, staged}}) {
            if (z0 >= z1) continue;
            a.AddImm(kT1, kNext, cb * p.sx_cb + slot + z0 * row_pixels);
            a.Li(kT2, p.zero);
            a << "dma.vv " + R(kT1) + ", " + R(kT2) + ", " +
                     a.Desc({(z1 - z0) * p.grid_w, p.pitch(), 0, p.pitch(), 1, 0, 0}) + ", " +
                     F(flag);
            ++issued;
          }
        }
      }
  }
  // f32 dY lands transposed, [cout][position] (4-byte rows): one copy per cout block when the
  // lines are contiguous positions (grid_w == wo), else one per line; a short block
  // signals the copies it leaves out, so every block adds the same count.
  const bool whole = p.grid_w == s.wo;
  auto copy = [&](int64_t c, int64_t co, int64_t first_line, int64_t n_lines) {
    const int64_t r = first_line - c * p.rows;
    a.AddImm(kT1, kNext, p.sd + (c * p.coutb + co) * p.dy_stage_tile() + r * p.grid_w * 4);
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
               p.sd + (c * p.coutb + co) * p.dy_stage_tile() + (l % p.rows) * p.grid_w * p.pitch());
      a.AddImm(kT2, kDySrc, (y * s.wo * s.cout + (p.cout_lo + co) * kMxuEdge) * e);
      a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({s.wo, p.cout_rows(co) * e, s.cout * e, p.pitch(), end - l, s.wo * s.cout * e,
                       p.grid_w * p.pitch()}) +
               ", " + F(flag);
      ++issued;
    }
  }
  for (int64_t co = 0; p.dy_rows && !p.stack_h && co < p.coutb; ++co) {
    // Rows [position][cout]. Lines of contiguous positions (or one line per tile): the
    // block's whole tiles in one copy (a plane per tile), the lines of a part-filled last
    // tile in a second. Else one copy per tile, a plane per line.
    auto rows_copy = [&](int64_t c, int64_t l0, int64_t positions, int64_t planes,
                         int64_t dst_plane) {
      a.AddImm(kT1, kNext, p.sd + (c * p.coutb + co) * p.dy_stage_tile());
      a.AddImm(kT2, kDySrc, (l0 * s.wo * s.cout + (p.cout_lo + co) * kMxuEdge) * e);
      a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
               a.Desc({positions, p.cout_rows(co) * e, s.cout * e, p.pitch(), planes,
                       positions * s.cout * e, dst_plane}) +
               ", " + F(flag);
      ++issued;
    };
    if (p.dy_whole_tiles()) {
      const int64_t full = lines / p.rows, rest = lines % p.rows;
      if (full > 0) rows_copy(0, 0, p.rows * s.wo, full, p.coutb * p.dy_stage_tile());
      if (rest > 0) rows_copy(full, full * p.rows, rest * s.wo, 1, 0);
      continue;
    }
    for (int64_t c = 0; c < p.chunks; ++c) {
      const int64_t nl = std::clamp<int64_t>(lines - c * p.rows, 0, p.rows);
      if (nl > 0) rows_copy(c, c * p.rows, s.wo, nl, p.grid_w * p.pitch());
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
  a.AddImm(kXSrc, kXSrc, p.x_block_bytes());
  a.AddImm(kDySrc, kDySrc, p.dy_block_bytes());
  a << "addi " + R(kRow) + ", " + R(kRow) + ", 1";
  const std::string same = a.NewLabel("same_image");
  a.Li(kT1, p.blocks);
  a << "blt " + R(kRow) + ", " + R(kT1) + ", " + same << "li " + R(kRow) + ", 0";
  a.AddImm(kXSrc, kXSrc, s.h * s.w * s.cin * p.elem() - p.blocks * p.x_block_bytes());
  a.AddImm(kDySrc, kDySrc,
           p.stack_h ? 0 : (s.ho - p.blocks * p.lines()) * s.wo * s.cout * p.elem());  // one image
  a.Label(same);
}

}  // namespace tpusim::lowering::wgrad
