// Per block (one output-gradient line of one 128-image block): DMA brings the X lines the
// window reads (each pixel a [128 images][128 cin] tile, rows gathered image by image) and
// the dY line (the same, per cout block); the VPU transposes each dY tile to [cout][image].
// Each MXU takes cout blocks (or, with one cout block, every other pixel, the partial sums
// added at the end): per pixel, tap and cin block, the X tile of the pixel the tap reads is
// the weights and the dY^T tile the left-hand rows, accumulating dW^T. Blocks alternate
// between two buffers, so the DMA fills block i + 2 and the VPU transposes block i + 1 while
// the MXUs multiply block i. The program is unrolled: every tap that reads padding is left
// out. At the end the VPU transposes the popped results and DMA writes dW.
#include "compiler/lowering/conv/conv_wgrad_batch.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "compiler/lowering/conv/conv_wgrad_emit.h"

namespace tpusim::lowering {
namespace wgrad {
namespace {

// Flags of this kernel (a lowered kernel owns f0..f15).
enum BatchFlag : int {
  kBLoaded0 = 0,  // + buffer: the block's copies landed (the VPU waits for all)
  kBReady0 = 3,   // + buffer: the VPU transposed the block's dY (each MXU takes 1)
  kBXFree0 = 6,   // + buffer: an MXU is done with the buffer (the DMA waits for all)
  kBTFree0 = 9,   // + buffer: the same, for the VPU
  kBZeroed = 12,
  kBPopped = 13,
  kBOut = 14,
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct BatchPlan {
  WeightGradShape s;
  int64_t kh = 0, kw = 0, taps = 0, nb = 0;  // window, 128-image blocks
  int64_t cin_lo = 0, cinb = 0, cout_lo = 0, coutb = 0;
  int64_t mxus = 0, per_mxu = 0;
  bool k_split = false;  // one cout block: MXU m takes the pixels p with p mod 2 == m
  // VMEM: a zero tile at 0, `bufs` buffers (X tiles [ky][x][cin block], dY rows and dY^T
  // tiles [pixel][cout block]), then each MXU's popped regions. With three, the copies of
  // block i + 2 wait only for the MXUs' block i - 1, so they land while block i + 1 runs.
  int64_t bufs = 0, x_bytes = 0, dy_bytes = 0, buf[3] = {}, out = 0, out_bytes = 0;

  int64_t regions() const { return per_mxu * taps * cinb; }
  int64_t region(int64_t j, int64_t t, int64_t cb) const { return (j * taps + t) * cinb + cb; }
  int64_t x_tile(int par, int64_t ky, int64_t x, int64_t cb) const {
    return buf[par] + ((ky * s.w + x) * cinb + cb) * kTileBytes;
  }
  int64_t dy_rows(int par, int64_t c, int64_t co) const {
    return buf[par] + x_bytes + (c * coutb + co) * kTileBytes;
  }
  int64_t dy_tile(int par, int64_t c, int64_t co) const {
    return buf[par] + x_bytes + dy_bytes + (c * coutb + co) * kTileBytes;
  }
  int64_t end() const { return out + mxus * out_bytes; }
  // X line read by tap row ky at output line y, and column by tap column kx at column c; -1
  // in the padding.
  int64_t x_line(int64_t y, int64_t ky) const {
    const int64_t l = s.dilation * y + ky - s.pad_lo;
    return l >= 0 && l < s.h ? l : -1;
  }
  int64_t x_col(int64_t c, int64_t kx) const {
    const int64_t x = s.dilation * c + kx - s.pad_lo;
    return x >= 0 && x < s.w ? x : -1;
  }
};

BatchPlan MakeBatchPlan(const WeightGradShape& s, int64_t cin_lo, int64_t cinb, int64_t cout_lo,
                        int64_t coutb, int64_t bufs) {
  BatchPlan p;
  p.s = s;
  p.kh = s.h + s.pad_lo + s.pad_hi - (s.ho - 1) * s.dilation;
  p.kw = s.w + s.pad_lo + s.pad_hi - (s.wo - 1) * s.dilation;
  p.taps = p.kh * p.kw, p.nb = s.batch / kMxuEdge;
  p.cin_lo = cin_lo, p.cinb = cinb, p.cout_lo = cout_lo, p.coutb = coutb;
  p.mxus = s.mxus;
  p.k_split = coutb < p.mxus;
  p.per_mxu = p.k_split ? coutb : coutb / p.mxus;
  p.x_bytes = p.kh * s.w * cinb * kTileBytes;
  p.dy_bytes = s.wo * coutb * kTileBytes;
  const int64_t buf_bytes = p.x_bytes + 2 * p.dy_bytes;
  p.bufs = bufs;
  for (int64_t k = 0; k < bufs; ++k) p.buf[k] = kTileBytes + k * buf_bytes;
  p.out = kTileBytes + bufs * buf_bytes, p.out_bytes = p.regions() * kStageTileBytes;
  return p;
}

bool Fits(const BatchPlan& p) {
  return p.regions() * kMxuEdge <= p.s.acc_rows && p.end() <= p.s.vmem_bytes;
}

// The channel blocks per pass: the split into the fewest passes that fits (cout blocks a
// multiple of the MXUs, or one block with the pixels split); ties to more cout blocks, whose
// dY tiles each pass transposes once.
std::vector<BatchPlan> PlanBatchPasses(const WeightGradShape& s) {
  if (!s.bf16 || s.batch <= 0 || s.batch % kMxuEdge || s.cin % kMxuEdge || s.cout % kMxuEdge ||
      s.transposed_out || s.mxus < 1 || s.mxus > 2)
    throw std::invalid_argument("batch weight gradient: needs bf16, 128-image and channel blocks");
  const int64_t ci = s.cin / kMxuEdge, co = s.cout / kMxuEdge;
  int64_t best_ci = 0, best_co = 0, best = 0, best_bufs = 0;
  for (int64_t cob = 1; cob <= co; ++cob) {
    if (cob > 1 && cob % s.mxus) continue;
    for (int64_t cib = 1; cib <= ci; ++cib) {
      const int64_t bufs = Fits(MakeBatchPlan(s, 0, cib, 0, cob, 3))   ? 3
                           : Fits(MakeBatchPlan(s, 0, cib, 0, cob, 2)) ? 2
                                                                       : 0;
      if (!bufs) break;
      const int64_t passes = CeilDiv(ci, cib) * CeilDiv(co, cob);
      if (!best || passes < best || (passes == best && bufs > best_bufs) ||
          (passes == best && bufs == best_bufs && cob > best_co))
        best = passes, best_ci = cib, best_co = cob, best_bufs = bufs;
    }
  }
  if (!best) throw std::invalid_argument("batch weight gradient: no pass fits");
  const BatchPlan shape = MakeBatchPlan(s, 0, 1, 0, 1, 2);
  if (shape.taps <= 1 || shape.kh <= 0 || shape.kw <= 0)
    throw std::invalid_argument("batch weight gradient: a 1x1 window");
  std::vector<BatchPlan> passes;
  for (int64_t o = 0; o < co; o += best_co)
    for (int64_t i = 0; i < ci; i += best_ci)
      passes.push_back(
          MakeBatchPlan(s, i, std::min(best_ci, ci - i), o, std::min(best_co, co - o), best_bufs));
  return passes;
}

// Copies of block b (line y of image block ib) into buffer `par`, each adding 1 to its
// loaded flag; returns how many.
int64_t EmitCopies(const BatchPlan& p, ConvAsm& a, int64_t y, int64_t ib, int par) {
  const WeightGradShape& s = p.s;
  const int64_t image_x = s.h * s.w * s.cin * 2, image_dy = s.ho * s.wo * s.cout * 2;
  a << "wait dma, " + F(kBXFree0 + par) + ", " + std::to_string(p.mxus);
  const std::string flag = F(kBLoaded0 + par);
  int64_t n = 0;
  const DescShape xd{kMxuEdge,  kSlotBytes,         image_x, kSlotBytes, s.w,
                     s.cin * 2, p.cinb * kTileBytes};
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t l = p.x_line(y, ky);
    if (l < 0) continue;
    for (int64_t cb = 0; cb < p.cinb; ++cb) {
      a.Li(kT1, p.x_tile(par, ky, 0, cb));
      a.Li(kT2, static_cast<int64_t>(s.x) + ib * kMxuEdge * image_x +
                    (l * s.w * s.cin + (p.cin_lo + cb) * kMxuEdge) * 2);
      a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " + a.Desc(xd) + ", " + flag;
      ++n;
    }
  }
  const DescShape dd{kMxuEdge,   kSlotBytes,          image_dy, kSlotBytes, s.wo,
                     s.cout * 2, p.coutb * kTileBytes};
  for (int64_t co = 0; co < p.coutb; ++co) {
    a.Li(kT1, p.dy_rows(par, 0, co));
    a.Li(kT2, static_cast<int64_t>(s.dy) + ib * kMxuEdge * image_dy +
                  (y * s.wo * s.cout + (p.cout_lo + co) * kMxuEdge) * 2);
    a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " + a.Desc(dd) + ", " + flag;
    ++n;
  }
  return n;
}

// The MXUs' work on pixel c of block line y in buffer `par`; `pixel` counts pixels over the
// blocks (k_split alternates MXUs by it).
void EmitPixel(const BatchPlan& p, ConvAsm& a, int64_t y, int64_t c, int par, int64_t pixel) {
  for (int64_t j = 0; j < p.per_mxu; ++j) {
    std::vector<int64_t> mxus;
    for (int64_t m = 0; m < p.mxus; ++m) {
      if (p.k_split && pixel % p.mxus != m) continue;
      const int64_t co = p.k_split ? j : m + j * p.mxus;
      mxus.push_back(m);
      a.Li(kLhs0 + static_cast<int>(m), p.dy_tile(par, c, co));
    }
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      if (p.x_line(y, ky) < 0) continue;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t x = p.x_col(c, kx);
        if (x < 0) continue;
        for (int64_t cb = 0; cb < p.cinb; ++cb) {
          a.Li(kAddr, p.x_tile(par, ky, x, cb));
          a.Li(kT3, p.region(j, ky * p.kw + kx, cb) * kMxuEdge);
          for (int64_t m : mxus) {
            const std::string mx = "m" + std::to_string(m);
            a << "mxu.ldw " + mx + ", " + R(kAddr)
              << "mxu.mma " + mx + ", " + R(kLhs0 + m) + ", " + R(kRows0) + ", " + R(kT3);
          }
        }
      }
    }
  }
}

// Pops every region, adds the split partial sums, transposes dW^T to dW and copies it out.
void EmitBatchDrain(const BatchPlan& p, ConvAsm& a) {
  const WeightGradShape& s = p.s;
  EmitPopRegions(a, p.mxus, p.regions(), p.out, p.out_bytes, kBPopped);
  if (p.k_split) EmitAddPartialSums(a, p.out, p.out_bytes);
  const int64_t owners = p.k_split ? 1 : p.mxus;
  for (int64_t m = 0; m < owners; ++m)
    for (int64_t r = 0; r < p.regions(); ++r) {
      const int64_t at = p.out + m * p.out_bytes + r * kStageTileBytes;
      a.Li(kT1, at);
      Transpose(a, 0, at, kT1, false);
    }
  a << "signal vpu, " + F(kBZeroed) + ", 1"
    << "wait dma, " + F(kBZeroed) + ", 1";
  int64_t copies = 0;
  for (int64_t m = 0; m < owners; ++m)
    for (int64_t j = 0; j < p.per_mxu; ++j) {
      const int64_t co = p.k_split ? j : m + j * p.mxus;
      for (int64_t cb = 0; cb < p.cinb; ++cb) {
        const int64_t row = (p.cin_lo + cb) * kMxuEdge * s.cout + (p.cout_lo + co) * kMxuEdge;
        a.Li(kT1, static_cast<int64_t>(s.dw) + row * 4);
        a.Li(kT2, p.out + m * p.out_bytes + p.region(j, 0, cb) * kStageTileBytes);
        const DescShape d{kMxuEdge,          kMxuEdge * 4, kPixelBytes,
                          s.cout * 4,        p.taps,       p.cinb * kStageTileBytes,
                          s.cin * s.cout * 4};
        a << "dma.vh " + R(kT1) + ", " + R(kT2) + ", " + a.Desc(d) + ", " + F(kBOut);
        ++copies;
      }
    }
  a << "wait seq, " + F(kBOut) + ", " + std::to_string(copies);
}

// One pass: zero the accumulators, every block, drain.
void EmitBatchPass(const BatchPlan& p, ConvAsm& a) {
  const WeightGradShape& s = p.s;
  a << "# pass: cin blocks " + std::to_string(p.cin_lo) + "+" + std::to_string(p.cinb) +
           ", cout blocks " + std::to_string(p.cout_lo) + "+" + std::to_string(p.coutb) +
           (p.k_split ? ", pixels split over the MXUs" : "");
  for (int f = kBLoaded0; f <= kBOut; ++f)
    a << "sflag " + F(f) + ", " + std::to_string(f >= kBXFree0 && f < kBZeroed ? p.mxus : 0);
  const auto slot = [&](int64_t b) { return static_cast<int>(b % p.bufs); };
  ZeroVmem(a, 0, 0, kTileBytes);
  a << "signal vpu, " + F(kBZeroed) + ", 1"
    << "wait seq, " + F(kBZeroed) + ", 1";
  a.Li(kRows0, kMxuEdge);
  for (int64_t m = 0; m < p.mxus; ++m) {  // zero every accumulator region
    a.Li(kT1, 0);
    a << "mxu.ldw m" + std::to_string(m) + ", " + R(kT1);
    for (int64_t r = 0; r < p.regions(); ++r) {
      a.Li(kT3, r * kMxuEdge);
      a << "mxu.mm m" + std::to_string(m) + ", " + R(kT1) + ", " + R(kRows0) + ", " + R(kT3);
    }
  }
  const int64_t total = s.ho * p.nb;
  std::vector<int64_t> copies(static_cast<size_t>(total));
  auto line = [&](int64_t b) { return b % s.ho; };
  auto block_copies = [&](int64_t b) {
    copies[static_cast<size_t>(b)] = EmitCopies(p, a, line(b), b / s.ho, slot(b));
  };
  auto tiles_start = [&](int64_t b) {
    const int par = slot(b);
    a << "wait vpu, " + F(kBLoaded0 + par) + ", " + std::to_string(copies[static_cast<size_t>(b)])
      << "wait vpu, " + F(kBTFree0 + par) + ", " + std::to_string(p.mxus);
  };
  auto tiles_of_pixel = [&](int64_t b, int64_t c) {
    const int par = slot(b);
    for (int64_t co = 0; co < p.coutb; ++co) {
      a.Li(kT1, p.dy_tile(par, c, co));
      Transpose(a, 0, p.dy_rows(par, c, co), kT1, true, true);
    }
  };
  auto tiles_end = [&](int64_t b) {
    a << "signal vpu, " + F(kBReady0 + slot(b)) + ", " + std::to_string(p.mxus);
  };
  block_copies(0);
  if (total > 1) block_copies(1);
  tiles_start(0);
  for (int64_t c = 0; c < s.wo; ++c) tiles_of_pixel(0, c);
  tiles_end(0);
  int64_t pixel = 0;
  for (int64_t b = 0; b < total; ++b) {
    const int par = slot(b);
    if (b + 2 < total) block_copies(b + 2);
    const bool next = b + 1 < total;
    if (next) tiles_start(b + 1);
    for (int64_t m = 0; m < p.mxus; ++m)
      a << "wait mxu" + std::to_string(m) + ", " + F(kBReady0 + par) + ", 1";
    for (int64_t c = 0; c < s.wo; ++c, ++pixel) {
      if (next) tiles_of_pixel(b + 1, c);
      EmitPixel(p, a, line(b), c, par, pixel);
    }
    if (next) tiles_end(b + 1);
    for (int64_t m = 0; m < p.mxus; ++m)
      a << "signal mxu" + std::to_string(m) + ", " + F(kBXFree0 + par) + ", 1"
        << "signal mxu" + std::to_string(m) + ", " + F(kBTFree0 + par) + ", 1";
  }
  EmitBatchDrain(p, a);
  for (int f = kBLoaded0; f <= kBOut; ++f) a << "sflag " + F(f) + ", 0";  // every unit is done
}

}  // namespace
}  // namespace wgrad

bool BatchWeightGradTakes(const WeightGradShape& shape) {
  try {
    wgrad::PlanBatchPasses(shape);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

std::string BatchWeightGradKernel(const WeightGradShape& shape) {
  const std::vector<wgrad::BatchPlan> passes = wgrad::PlanBatchPasses(shape);
  const WeightGradShape& s = shape;
  ConvAsm a(31);
  a << "# weight gradient " + std::to_string(s.batch) + "x" + std::to_string(s.h) + "x" +
           std::to_string(s.w) + "x" + std::to_string(s.cin) + " by " + std::to_string(s.ho) + "x" +
           std::to_string(s.wo) + "x" + std::to_string(s.cout) +
           ", contracting over the batch: " + std::to_string(passes.size()) +
           (passes.size() == 1 ? " pass" : " passes") +
           " (compiler/lowering/conv/conv_wgrad_batch.cc)";
  for (const wgrad::BatchPlan& pass : passes) wgrad::EmitBatchPass(pass, a);
  a << "halt";
  return ".tag \"" + s.tag + "\"\n" + a.Text();
}

}  // namespace tpusim::lowering
