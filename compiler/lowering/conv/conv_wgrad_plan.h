// The arithmetic of the weight-gradient kernel (conv_wgrad.h): how positions form K tiles
// and blocks, how X's channels (or, folded, taps x channels) fill the MXU's weight columns,
// where everything sits in VMEM, and how the work splits into passes that each fit the
// accumulators. Shared by the emitters in conv_wgrad.cc and conv_wgrad_copies.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/lowering/conv/conv_asm.h"
#include "compiler/lowering/conv/conv_plan.h"
#include "compiler/lowering/conv/conv_wgrad.h"

namespace tpusim::lowering::wgrad {

inline constexpr int64_t CeilDivision(int64_t a, int64_t b) { return (a + b - 1) / b; }  // a >= 0
inline constexpr int64_t kPixelBytes = kMxuEdge * 4;  // one staged f32 pixel of 128 channels
inline constexpr int64_t kStageTileBytes = kMxuEdge * kPixelBytes;
inline constexpr int64_t kMaxChunks = 8;  // K tiles per block: fewer, longer blocks
// Folded: longer blocks, so each tap row's copy moves more lines (VMEM permitting).
inline constexpr int64_t kMaxFoldedChunks = 32;

// One pass: the cin blocks [cin_lo, cin_lo + cinb) against the cout blocks
// [cout_lo, cout_lo + coutb), a full run over every block of positions.
struct Pass {
  int64_t cin_lo = 0, cinb = 0, cout_lo = 0, coutb = 0;
  // Stacked images (stack_h > 0): the shape is one image of every image's lines, of which
  // line l is line l mod stack_h of its image, valid below stack_ho (see PlanPasses).
  int64_t stack_h = 0, stack_ho = 0;
  // Stacked padded images (x_h > 0): each stacked image is X's x_h rows between its
  // padding rows, which no copy writes (they stay zero).
  int64_t x_h = 0;
};

struct Plan {
  WeightGradShape s;
  // Folded (few input channels): each position's staged row holds, per tap, that tap's X
  // pixel (im2col), so a cin block is up to `fold_taps` taps x cin columns and the matmuls
  // see a single tap over a grid of wo positions per line.
  bool fold = false;
  int64_t fold_taps = 0;
  int64_t kh = 0, kw = 0, taps = 0;  // dW's taps
  int64_t skh = 1, skw = 1;          // taps the matmuls walk (1 x 1 when folded)
  // Unfolded with window dilation d: X stages as d x d phase images (phase (py, px) holds
  // X[d i + py - pad_lo][d j + px - pad_lo]; `phy` x `phx` of them, one slot each), and tap
  // (ky, kx) reads phase (ky mod d, kx mod d) at offset (ky / d, kx / d), of at most
  // qh x qw offsets. Without dilation: one phase, the padded X; qh x qw = kh x kw.
  int64_t phy = 1, phx = 1, qh = 1, qw = 1;
  int64_t grid_w = 0;  // staged positions per line: X's (phase image's) padded width, or wo folded
  // A block is `chunks` K tiles of `rows` lines each; an image has `blocks` of them, the
  // last with `tail` lines.
  int64_t rows = 0, chunks = 1, blocks = 0, tail = 0, pixels = 0;
  int64_t cin_lo = 0, cinb = 0, cout_lo = 0, coutb = 0;  // this pass's blocks
  int64_t mxus = 0, per_mxu = 0;                         // cout blocks per MXU
  // One cout block and two MXUs: they split the K tiles (MXU m takes tiles c = m mod 2),
  // each accumulating its own partial dW^T, added before the copy out.
  bool k_split = false;
  int64_t stack_h = 0, stack_ho = 0;  // as in Pass; blocks are whole images
  int64_t stack_x_h = 0;              // Pass::x_h
  int64_t stack_copies = 0;           // stacked: dY copies per cout block of a full block
  bool clipped = false;     // padding: the first and last block of an image stage zero rows
  int64_t fold_copies = 0;  // folded: the most X copies a block issues
  // dY lands as rows ([position][cout]; one copy per cout block when a tile is one line)
  // and the VPU transposes it; else it lands transposed, in 4-byte rows (f32 only).
  bool dy_rows = false;
  // VMEM: the zero tile, two buffers (each: X staging [cin block][pixel], dY staging
  // [cout block], tiles), the pop buffers. sd and tiles are offsets within a buffer.
  int64_t zero = 0, buf[2] = {}, buf_bytes = 0, sx_cb = 0, sd = 0, tiles = 0, out = 0,
          out_bytes = 0;

  int64_t staged_taps() const { return skh * skw; }
  int64_t slots() const { return phy * phx; }
  int64_t d() const { return fold ? 1 : s.dilation; }  // the matmuls' view of the dilation
  // Bytes of an X or dY element in HBM, and the pitch of a staged pixel (X) or position
  // (dY as rows): f32 staging is rounded into the tiles, bf16 staging has their layout.
  int64_t elem() const { return s.bf16 ? 2 : 4; }
  int64_t pitch() const { return s.bf16 ? kSlotBytes : kPixelBytes; }
  // Bytes of one staged dY tile (128 positions x 128 cout) in the staging area at sd.
  int64_t dy_stage_tile() const { return kMxuEdge * pitch(); }
  // Offsets in a buffer: bf16 X rows of a staged tap (from the tap's pixel), dY^T tiles.
  int64_t x_rows(int64_t c, int64_t cb, int64_t t) const {
    const int64_t ky = t / skw, kx = t % skw, slot = (ky % d()) * phx + kx % d();
    return tiles +
           ((cb * slots() + slot) * pixels + c * rows * grid_w + (ky / d()) * grid_w + kx / d()) *
               kSlotBytes;
  }
  int64_t x_tile_bytes() const { return cinb * slots() * pixels * kSlotBytes; }  // bf16 X
  int64_t dy_tile(int64_t c, int64_t co) const {
    return tiles + x_tile_bytes() + (c * coutb + co) * kTileBytes;
  }
  int64_t lines() const { return chunks * rows; }
  // Folded: the taps of this pass's cin block cb.
  int64_t first_tap(int64_t cb) const { return (cin_lo + cb) * fold_taps; }
  int64_t end_tap(int64_t cb) const { return std::min(taps, first_tap(cb) + fold_taps); }
  // dW rows (of its [taps x cin] rows when folded, of one tap's cin rows otherwise) that
  // cin block cb fills, and the first of them.
  int64_t cin_rows(int64_t cb) const {
    return fold ? (end_tap(cb) - first_tap(cb)) * s.cin
                : std::min(kMxuEdge, s.cin - (cin_lo + cb) * kMxuEdge);
  }
  int64_t cin_row0(int64_t cb) const {
    return fold ? first_tap(cb) * s.cin : (cin_lo + cb) * kMxuEdge;
  }
  int64_t cout_rows(int64_t co) const {
    return std::min(kMxuEdge, s.cout - (cout_lo + co) * kMxuEdge);
  }
  int64_t region(int64_t j, int64_t t, int64_t cb) const {
    return (j * staged_taps() + t) * cinb + cb;
  }
  int64_t regions() const { return per_mxu * staged_taps() * cinb; }
  // Per cin block and phase, unfolded: X's rows, and zero rows above and below (clipped).
  int64_t x_copies() const {
    if (fold) return fold_copies;
    if (stack_x_h) return cinb * CeilDivision(lines(), stack_h);  // one per image
    return (clipped ? 3 : 1) * cinb * slots();
  }
  // dY as rows, not stacked: whole tiles per copy (grid_w == wo, or a line per tile).
  bool dy_whole_tiles() const { return dy_rows && !stack_h && (grid_w == s.wo || rows == 1); }
  int64_t dy_copies() const {
    return stack_h            ? coutb * stack_copies
           : dy_whole_tiles() ? coutb * (rows == 1 ? 1 : 2)
           : dy_rows          ? coutb * chunks
                              : coutb * chunks * (grid_w == s.wo ? 1 : rows);
  }
  int64_t copies() const { return x_copies() + dy_copies(); }
  // Stacked: the dY copies of a block of `n` lines, each image's valid lines split where
  // they cross into the next K tile, as (first line, end line).
  std::vector<std::pair<int64_t, int64_t>> stacked_runs(int64_t n) const {
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t first = 0; first < n; first += stack_h)
      for (int64_t l = first; l < std::min(first + stack_ho, n);) {
        const int64_t end = std::min({first + stack_ho, n, (l / rows + 1) * rows});
        runs.push_back({l, end});
        l = end;
      }
    return runs;
  }
  // Bytes HBM advances per output line of X (dilation rows) and, per block, of dY (stacked:
  // the block's images' valid lines).
  int64_t x_line_bytes() const { return s.dilation * s.w * s.cin * elem(); }
  // Bytes HBM advances per block of X.
  int64_t x_block_bytes() const {
    return stack_x_h ? lines() / stack_h * stack_x_h * s.w * s.cin * elem()
                     : lines() * x_line_bytes();
  }
  int64_t dy_block_bytes() const {
    return (stack_h ? lines() / stack_h * stack_ho : lines()) * s.wo * s.cout * elem();
  }
};

// Folded: one copy of X into the rows of a block, taps (ky0..ky1, kx0..kx1) of cin block cb
// (of the pass) at positions [x0, x1) of the block's lines [y0, y1). The taps of a row read
// consecutive pixels into consecutive columns, so one copy takes a row's taps of one block
// wherever all of them are inside X; the edge positions where some read padding get one
// copy per position over the tap rows whose lines are valid alike.
// A `zero` copy instead fills the slots of lines a tap row reads only from padding with
// zeros from VMEM (a middle block may have written them).
struct FoldCopy {
  int64_t cb = 0, ky0 = 0, ky1 = 0, kx0 = 0, kx1 = 0, x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool zero = false;
};
// The copies of a block of `lines` lines from image line `first` (< 0: a block between
// the first and the last, whose lines are valid for every tap).
std::vector<FoldCopy> FoldedCopies(const Plan& p, int64_t first, int64_t lines);

// The plan of one pass; throws std::invalid_argument saying why when it does not fit.
Plan MakePlan(const WeightGradShape& s, const Pass& pass);

// The passes: one when everything fits the accumulators, else the split that copies the
// fewest bytes (each pass copies its cin blocks of X and its cout blocks of dY).
std::vector<Plan> PlanPasses(const WeightGradShape& s);

// The valid range [lo, hi) of output positions along one dimension for tap k: those whose
// X position k + dilation * y - pad_lo lies inside [0, size), clamped to [0, n).
struct Range {
  int64_t lo = 0, hi = 0;
};
Range TapRange(int64_t k, int64_t n, int64_t size, int64_t dilation, int64_t pad_lo);

}  // namespace tpusim::lowering::wgrad
