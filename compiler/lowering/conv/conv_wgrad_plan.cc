#include "compiler/lowering/conv/conv_wgrad_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace tpusim::lowering::wgrad {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
int64_t FloorDivSigned(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void Require(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument("weight-gradient kernel: " + why);
}

// Blocks of MXU columns X fills: 128 channels each, or folded taps x channels.
int64_t CinBlocks(const Plan& p) {
  return p.fold ? CeilDiv(p.taps, p.fold_taps) : CeilDiv(p.s.cin, kMxuEdge);
}

// The shape-level part of the plan (no pass, no VMEM layout).
Plan Geometry(const WeightGradShape& s) {
  Require(s.batch > 0 && s.ho > 0 && s.wo > 0 && s.h > 0 && s.w > 0 && s.cin > 0 && s.cout > 0,
          "needs positive sizes");
  Require(s.dilation >= 1 && s.pad_lo >= 0 && s.pad_hi >= 0,
          "needs a positive window dilation and non-negative padding");
  Require(s.mxus >= 1 && s.mxus <= 2, "plans for 1 or 2 MXUs per core");
  Require(!s.transposed_out || (s.h == s.ho && s.w == s.wo && s.pad_lo == 0 && s.pad_hi == 0),
          "a transposed result needs a 1x1 gradient");
  Require(!s.bf16 || (s.cin % 2 == 0 && s.cout % 2 == 0),
          "bf16 operands need even channel counts (DMA moves 4-byte words)");
  Plan p;
  p.s = s;
  p.kh = s.h + s.pad_lo + s.pad_hi - (s.ho - 1) * s.dilation;
  p.kw = s.w + s.pad_lo + s.pad_hi - (s.wo - 1) * s.dilation;
  Require(p.kh >= 1 && p.kw >= 1, "the window is larger than the padded input");
  p.taps = p.kh * p.kw;
  // Few channels fold the taps into the MXU's columns; up to 64 channels with few taps too
  // (as the forward kernel folds them, conv_plan.h), two taps of 64 filling a tile.
  p.fold = s.cin < kFoldBelowCin ||
           (s.cin <= kFoldUpToCin && p.taps > 1 && p.taps <= kFoldUpToTaps && s.dilation == 1);
  if (p.fold) {
    p.fold_taps = kMxuEdge / s.cin;
    p.grid_w = s.wo;
  } else {  // staged lines are phase images' padded lines: zero columns on either side
    const int64_t d = s.dilation;
    p.skh = p.kh, p.skw = p.kw;
    p.phy = std::min(d, p.kh), p.phx = std::min(d, p.kw);
    p.qh = CeilDiv(p.kh, d), p.qw = CeilDiv(p.kw, d);
    p.grid_w = s.wo + p.qw - 1;
  }
  Require(p.grid_w <= kMxuEdge,
          "a row of " + std::to_string(p.grid_w) + " positions exceeds one 128-position block");
  p.rows = kMxuEdge / p.grid_w;
  return p;
}

}  // namespace

Range TapRange(int64_t k, int64_t n, int64_t size, int64_t dilation, int64_t pad_lo) {
  Range r;
  r.lo = std::max<int64_t>(0, -FloorDivSigned(k - pad_lo, dilation));
  r.hi = std::min(n, FloorDivSigned(size - 1 - k + pad_lo, dilation) + 1);
  r.hi = std::max(r.hi, r.lo);
  return r;
}

std::vector<FoldCopy> FoldedCopies(const Plan& p, int64_t first, int64_t lines) {
  const WeightGradShape& s = p.s;
  const int64_t d = s.dilation;
  // The block's valid lines for tap row ky.
  auto ys = [&](int64_t ky) {
    if (first < 0) return Range{0, lines};
    const Range r = TapRange(ky, s.ho, s.h, d, s.pad_lo);
    return Range{std::max<int64_t>(r.lo - first, 0),
                 std::max<int64_t>(std::min(r.hi - first, lines), 0)};
  };
  std::vector<FoldCopy> main, edges;
  for (int64_t cb = 0; cb < p.cinb; ++cb)
    for (int64_t t = p.first_tap(cb); t < p.end_tap(cb);) {
      const int64_t ky = t / p.kw, kx0 = t % p.kw;
      const int64_t kx1 = std::min(p.kw, kx0 + p.end_tap(cb) - t);  // this row, this block
      t += kx1 - kx0;
      const Range y = ys(ky);
      for (const Range& z : {Range{0, std::min(y.lo, lines)}, Range{std::max(y.hi, y.lo), lines}})
        if (z.lo < z.hi) main.push_back({cb, ky, ky + 1, kx0, kx1, 0, s.wo, z.lo, z.hi, true});
      if (y.hi <= y.lo) continue;
      const int64_t x0 = TapRange(kx0, s.wo, s.w, d, s.pad_lo).lo;
      const int64_t x1 = TapRange(kx1 - 1, s.wo, s.w, d, s.pad_lo).hi;
      if (x0 < x1) main.push_back({cb, ky, ky + 1, kx0, kx1, x0, x1, y.lo, y.hi});
      for (int64_t x = 0; x < s.wo; ++x) {
        if (x0 < x1 && x >= x0 && x < x1) continue;
        // The taps kx with 0 <= dilation * x + kx - pad_lo < w.
        const int64_t lo = std::max(kx0, s.pad_lo - d * x);
        const int64_t hi = std::min(kx1, s.w + s.pad_lo - d * x);
        if (lo >= hi) continue;
        // Joins the copy of the tap row above when it is the same but for the row.
        auto same = std::find_if(edges.begin(), edges.end(), [&](const FoldCopy& e) {
          return e.cb == cb && e.ky1 == ky && e.kx0 == lo && e.kx1 == hi && e.x0 == x &&
                 e.y0 == y.lo && e.y1 == y.hi;
        });
        if (same != edges.end())
          ++same->ky1;
        else
          edges.push_back({cb, ky, ky + 1, lo, hi, x, x + 1, y.lo, y.hi});
      }
    }
  main.insert(main.end(), edges.begin(), edges.end());
  return main;
}

Plan MakePlan(const WeightGradShape& s, const Pass& pass) {
  Plan p = Geometry(s);
  p.cin_lo = pass.cin_lo, p.cinb = pass.cinb, p.cout_lo = pass.cout_lo, p.coutb = pass.coutb;
  p.stack_h = pass.stack_h, p.stack_ho = pass.stack_ho, p.stack_x_h = pass.x_h;
  p.dy_rows = p.fold || p.stack_h > 0 || s.bf16;  // bf16: DMA cannot transpose 2-byte words
  p.k_split = p.coutb == 1 && s.mxus == 2;
  p.mxus = p.k_split ? 2 : std::min<int64_t>(s.mxus, p.coutb);
  p.per_mxu = p.k_split ? 1 : CeilDiv(p.coutb, p.mxus);
  Require(p.regions() * kMxuEdge <= s.acc_rows,
          "taps x cin blocks x cout blocks per MXU exceed the accumulator rows");
  // The most K tiles per block (up to kMaxChunks, dividing the image's tiles) that fit.
  const int64_t tiles_per_image = CeilDiv(s.ho, p.rows);
  bool fits = false;
  // Only while dY's copies stay one per K tile (lines contiguous: grid_w == wo); per-line
  // copies of many tiles queue behind each other and leave the MXUs waiting.
  // dY as rows: one copy per cout block and block (folded) or image (stacked).
  const int64_t most = p.dy_rows ? kMaxFoldedChunks : p.grid_w == s.wo ? kMaxChunks : 1;
  // Stacked: the fewest tiles holding whole images, so that many blocks keep the pipeline
  // full; else the most that divide the image's tiles.
  const int64_t whole = p.stack_h / std::gcd(p.stack_h, p.rows);
  for (p.chunks = p.stack_h ? whole : std::min(most, tiles_per_image); p.chunks >= 1 && !fits;
       p.chunks = p.stack_h ? (p.chunks + whole > most ? 0 : p.chunks + whole) : p.chunks - 1) {
    // Blocks divide an image's tiles, but for one tall image (its last block may be short).
    if (!p.stack_h && s.batch > 1 && tiles_per_image % p.chunks) continue;
    // Staged pixels: the block's lines with the halo, and every row a tap's weights read.
    p.pixels = RoundUp(std::max((p.lines() + p.qh - 1) * p.grid_w,
                                ((p.lines() - p.rows + p.qh - 1) * p.grid_w + p.qw - 1 + kMxuEdge)),
                       2 * kZeroBlockBytes / kPixelBytes);
    p.sx_cb = p.slots() * p.pixels * p.pitch();
    p.sd = p.cinb * p.sx_cb;
    p.tiles = p.sd + p.chunks * p.coutb * p.dy_stage_tile();
    p.buf_bytes =
        RoundUp(p.tiles + p.x_tile_bytes() + p.chunks * p.coutb * kTileBytes, kZeroBlockBytes);
    p.buf[0] = kTileBytes, p.buf[1] = p.buf[0] + p.buf_bytes;
    p.out = p.buf[1] + p.buf_bytes;
    p.out_bytes = p.regions() * kStageTileBytes;
    fits = p.out + p.mxus * p.out_bytes <= s.vmem_bytes;
    if (fits) break;
  }
  Require(fits, "the buffers exceed VMEM");
  p.blocks = CeilDiv(tiles_per_image, p.chunks);
  p.tail = s.ho - (p.blocks - 1) * p.lines();
  if (p.stack_h) p.stack_copies = static_cast<int64_t>(p.stacked_runs(p.lines()).size());
  // Copies of the first and last block of an image clip their lines statically; the
  // blocks between must see every tap's whole range. (Stacked padded images: the padding
  // rows of every image stay zero.)
  for (int64_t ky = 0; ky < p.kh && !p.stack_x_h; ++ky) {
    const Range r = TapRange(ky, s.ho, s.h, s.dilation, s.pad_lo);
    p.clipped |= r.lo > 0 || r.hi < s.ho;
    Require(p.blocks < 3 || (r.lo <= p.lines() && r.hi >= (p.blocks - 1) * p.lines()),
            "padding reaches beyond the first and last block of lines");
  }
  if (p.fold) {
    const int64_t last = (p.blocks - 1) * p.lines();
    const std::pair<int64_t, int64_t> kinds[] = {
        {0, p.blocks == 1 ? p.tail : p.lines()}, {-1, p.lines()}, {last, p.tail}};
    for (const auto& [first, n] : kinds)
      p.fold_copies =
          std::max(p.fold_copies, static_cast<int64_t>(FoldedCopies(p, first, n).size()));
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const Range r = TapRange(kx, s.wo, s.w, s.dilation, s.pad_lo);
      p.clipped |= r.lo > 0 || r.hi < s.wo;
    }
  }
  return p;
}

namespace {

// The passes over `s` (images stacked when stack_h > 0); throws when nothing fits.
std::vector<Plan> Split(const WeightGradShape& s, int64_t stack_h, int64_t stack_ho,
                        int64_t x_h = 0) {
  const Plan g = Geometry(s);
  const int64_t nci = CinBlocks(g), nco = CeilDiv(s.cout, kMxuEdge);
  const double x_bytes = 4.0 * s.batch * s.h * s.w * s.cin;
  const double dy_bytes = 4.0 * s.batch * s.ho * s.wo * s.cout;
  // The smallest pass first: its error (VMEM, width) is the shape's when nothing fits.
  MakePlan(s, {0, 1, 0, std::min<int64_t>(nco, s.mxus), stack_h, stack_ho, x_h});
  double best = std::numeric_limits<double>::infinity();
  int64_t best_ci = 0, best_co = 0;
  for (int64_t ci = 1; ci <= nci; ++ci)
    for (int64_t co = 1; co <= nco; ++co) {
      if (co != nco && co % s.mxus) continue;  // every pass keeps both MXUs busy
      const int64_t pci = CeilDiv(nci, ci), pco = CeilDiv(nco, co);
      // X is copied once per cout pass, dY once per cin pass; ties: fewer passes.
      const double cost = pco * x_bytes + pci * dy_bytes + 1e-3 * static_cast<double>(pci * pco);
      if (cost >= best) continue;
      try {
        MakePlan(s, {0, ci, 0, co, stack_h, stack_ho, x_h});
      } catch (const std::invalid_argument&) {
        continue;
      }
      best = cost, best_ci = ci, best_co = co;
    }
  std::vector<Plan> passes;
  for (int64_t co = 0; co < nco; co += best_co)
    for (int64_t ci = 0; ci < nci; ci += best_ci)
      passes.push_back(MakePlan(s, {ci, std::min(best_ci, nci - ci), co,
                                    std::min(best_co, nco - co), stack_h, stack_ho, x_h}));
  return passes;
}

}  // namespace

std::vector<Plan> PlanPasses(const WeightGradShape& shape) {
  const WeightGradShape& s = shape;
  // Images smaller than a K tile, without padding, stack: the gradient is the same over
  // one image of all the images' lines (they lie one after the other in HBM), so K tiles
  // span images. 1x1: every line is valid, and a 7x7 image fills 126 of a tile's 128
  // positions instead of 49. Larger kernels: the last kh - 1 lines of each image see
  // the next image's rows and get no dY (a 9x9 padded image of 7x7 valid positions: 60%
  // of the positions valid instead of 38%).
  const bool small = s.w <= kMxuEdge && s.ho < kMxuEdge / s.w && s.batch > 1;
  const bool one_by_one = s.h == s.ho && s.w == s.wo && s.batch > 1;
  if ((small || one_by_one) && s.cin >= kFoldBelowCin && s.pad_lo == 0 && s.pad_hi == 0 &&
      s.dilation == 1) {
    WeightGradShape tall = s;
    tall.h = s.batch * s.h, tall.batch = 1;
    tall.ho = tall.h - (s.h - s.ho);
    // 1x1, any image size: the lines are simply consecutive, and blocks span images.
    if (s.h == s.ho) return Split(tall, 0, 0);
    try {
      return Split(tall, s.h, s.ho);
    } catch (const std::invalid_argument&) {
      // Whole images per block do not fit: one image at a time.
    }
  }
  // Padded images smaller than a K tile (stride 1) stack the same way, each image's X rows
  // between its zero padding rows: ResNet-50's 7x7 3x3 gradients fill 126 positions of a
  // tile (14 lines of 9 pixels, 98 valid) where one image filled 63 (49 valid).
  const int64_t hp = s.h + s.pad_lo + s.pad_hi, wp = s.w + s.pad_lo + s.pad_hi;
  if ((s.pad_lo || s.pad_hi) && s.dilation == 1 && s.batch > 1 && wp <= kMxuEdge &&
      s.ho < kMxuEdge / wp && !Geometry(s).fold) {
    WeightGradShape tall = s;
    tall.batch = 1, tall.h = s.batch * hp - s.pad_lo - s.pad_hi;
    tall.ho = s.batch * hp - (hp - s.ho);
    try {
      return Split(tall, hp, s.ho, s.h);
    } catch (const std::invalid_argument&) {
      // Whole images per block do not fit: one image at a time.
    }
  }
  return Split(s, 0, 0);
}

}  // namespace tpusim::lowering::wgrad
