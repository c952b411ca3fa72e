// Per block of output-gradient lines (the contraction: positions (line, column) over the
// input's full width, at most 128, so a tap's X rows are 128 consecutive staged pixels): DMA
// brings the block's X rows (with the kernel's halo) and dY rows into staging areas as f32;
// the VPU rounds X to bf16 in place order and transposes each cout block of dY into a
// [128 cout, 128 positions] bf16 tile (vxpose). Each MXU takes cout blocks: per tap and cin
// block, the X rows from the tap's offset are the weights and the dY tile the left-hand rows,
// accumulating dW^T. Columns past the output width have zero dY, so what X holds there does
// not count. Blocks loop; tiles alternate between two buffers so the VPU prepares block
// i + 1 while the MXUs multiply block i. At the end the VPU transposes the popped results.
#include "compiler/lowering/conv_wgrad.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

#include "compiler/lowering/conv_emit.h"

namespace tpusim::lowering {
namespace {

using conv::EmitRoundToBf16;

constexpr int64_t kPixelBytes = kMxuEdge * 4;  // one staged f32 pixel of 128 channels
constexpr int64_t kStageTileBytes = kMxuEdge * kPixelBytes;
constexpr int64_t kMaxChunks = 8;  // K tiles per block: fewer, longer blocks
// kRow, kXSrc, kDySrc describe the next block to copy; kBuf is the current block's buffer
// (staging areas and tiles), kNext the next one's.
enum Reg : int {
  kBlock = 1,
  kRow,
  kXSrc,
  kDySrc,
  kParity,
  kBuf,
  kT1,
  kT2,
  kT3,
  kNext,
  kOther,
  kAddr = 26
};
// Flags: copies landed (per parity), staging free, tiles ready, tiles free (per parity),
// zeros, pops, results out.
enum Flag : int {
  kLoaded0 = 0,
  kStageFree,
  kReady,
  kFree0,
  kFree1,
  kZeroed,
  kPopped,
  kOut,
  kLoaded1
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

struct Plan {
  WeightGradShape s;
  // A block is `chunks` K tiles of `rows` lines each; an image has `blocks` of them, the
  // last with `tail` lines.
  int64_t kh = 0, kw = 0, taps = 0, rows = 0, chunks = 1, blocks = 0, tail = 0, pixels = 0;
  int64_t cinb = 0, coutb = 0, mxus = 0, per_mxu = 0;  // cout blocks per MXU
  // VMEM: the zero tile, two buffers (each: X staging [cin block][pixel], dY staging
  // [cout block], tiles), the pop buffers. sd and tiles are offsets within a buffer.
  int64_t zero = 0, buf[2] = {}, buf_bytes = 0, sx_cb = 0, sd = 0, tiles = 0, out = 0,
          out_bytes = 0;
  // Offsets in a buffer: bf16 X rows of a tap (from the tap's pixel), dY^T tiles.
  int64_t x_rows(int64_t c, int64_t cb, int64_t t) const {
    return tiles + (cb * pixels + c * rows * s.w + (t / kw) * s.w + t % kw) * kSlotBytes;
  }
  int64_t dy_tile(int64_t c, int64_t co) const {
    return tiles + cinb * pixels * kSlotBytes + (c * coutb + co) * kTileBytes;
  }
  int64_t lines() const { return chunks * rows; }
  int64_t cin_rows(int64_t cb) const { return std::min(kMxuEdge, s.cin - cb * kMxuEdge); }
  int64_t cout_rows(int64_t co) const { return std::min(kMxuEdge, s.cout - co * kMxuEdge); }
  int64_t region(int64_t j, int64_t t, int64_t cb) const { return (j * taps + t) * cinb + cb; }
  int64_t regions() const { return per_mxu * taps * cinb; }
  int64_t copies() const { return cinb + coutb * chunks * (s.w == s.wo ? 1 : rows); }
};

void Require(bool ok, const std::string& why) {
  if (!ok) throw std::invalid_argument("weight-gradient kernel: " + why);
}

Plan MakePlan(const WeightGradShape& s) {
  Require(
      s.batch > 0 && s.ho > 0 && s.wo > 0 && s.h >= s.ho && s.w >= s.wo && s.cin > 0 && s.cout > 0,
      "needs positive sizes and a window no larger than the input");
  Require(s.mxus >= 1 && s.mxus <= 2, "plans for 1 or 2 MXUs per core");
  Plan p;
  p.s = s;
  p.kh = s.h - s.ho + 1, p.kw = s.w - s.wo + 1, p.taps = p.kh * p.kw;
  Require(s.w <= kMxuEdge,
          "an input row of " + std::to_string(s.w) + " pixels exceeds one 128-position block");
  p.rows = kMxuEdge / s.w;
  p.cinb = CeilDiv(s.cin, kMxuEdge), p.coutb = CeilDiv(s.cout, kMxuEdge);
  p.mxus = std::min<int64_t>(s.mxus, p.coutb), p.per_mxu = CeilDiv(p.coutb, p.mxus);
  Require(p.regions() * kMxuEdge <= s.acc_rows,
          "taps x cin blocks x cout blocks per MXU exceed the accumulator rows");
  // The most K tiles per block (up to kMaxChunks, dividing the image's tiles) that fit.
  const int64_t tiles_per_image = CeilDiv(s.ho, p.rows);
  bool fits = false;
  // Only while dY's copies stay one per K tile (lines contiguous: w == wo); per-line
  // copies of many tiles queue behind each other and leave the MXUs waiting.
  const int64_t most = s.w == s.wo ? kMaxChunks : 1;
  for (p.chunks = std::min(most, tiles_per_image); p.chunks >= 1 && !fits; --p.chunks) {
    if (tiles_per_image % p.chunks) continue;
    // Staged pixels: the block's lines with the halo, and every row a tap's weights read.
    p.pixels = RoundUp(std::max((p.lines() + p.kh - 1) * s.w,
                                ((p.lines() - p.rows + p.kh - 1) * s.w + p.kw - 1 + kMxuEdge)),
                       2 * kZeroBlockBytes / kPixelBytes);
    p.sx_cb = p.pixels * kPixelBytes;
    p.sd = p.cinb * p.sx_cb;
    p.tiles = p.sd + p.chunks * p.coutb * kStageTileBytes;
    p.buf_bytes =
        RoundUp(p.tiles + p.cinb * p.pixels * kSlotBytes + p.chunks * p.coutb * kTileBytes,
                kZeroBlockBytes);
    p.buf[0] = kTileBytes, p.buf[1] = p.buf[0] + p.buf_bytes;
    p.out = p.buf[1] + p.buf_bytes;
    p.out_bytes = p.regions() * kStageTileBytes;
    fits = p.out + p.mxus * p.out_bytes <= s.vmem_bytes;
    if (fits) break;
  }
  Require(fits, "the buffers exceed VMEM");
  p.blocks = tiles_per_image / p.chunks;
  p.tail = s.ho - (p.blocks - 1) * p.lines();
  return p;
}

// VPU: zero `bytes` (a multiple of 4096) of VMEM from register `base` + `offset` with v0.
void ZeroVmem(ConvAsm& a, int base, int64_t offset, int64_t bytes) {
  a << "vmovi v0, 0.0";
  a.AddImm(kT1, base, offset);
  a.Li(kT2, bytes / kZeroBlockBytes);
  a << "vloop " + R(kT2) + ", 1"
    << "vsts v0, " + R(kT1) + ", " + std::to_string(kZeroBlockBytes);
}

// `body(parity)` under a branch on kParity.
template <typename F>
void PerParity(ConvAsm& a, F body) {
  const std::string odd = a.NewLabel("odd"), done = a.NewLabel("parity_done");
  a << "bne " + R(kParity) + ", r0, " + odd;
  body(0);
  a << "jmp " + done;
  a.Label(odd);
  body(1);
  a.Label(done);
}

// Copies of the block at kXSrc/kDySrc into kNext (`lines` dY rows, their X rows with the
// halo; dY position (line, column) at line * w + column); each adds 1 to `flag`.
void EmitCopies(const Plan& p, ConvAsm& a, int64_t lines, int flag) {
  const WeightGradShape& s = p.s;
  for (int64_t cb = 0; cb < p.cinb; ++cb) {
    a.AddImm(kT1, kNext, cb * p.sx_cb);
    a.AddImm(kT2, kXSrc, cb * kMxuEdge * 4);
    a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
             a.Desc({s.w, p.cin_rows(cb) * 4, s.cin * 4, kPixelBytes, lines + p.kh - 1,
                     s.w * s.cin * 4, s.w * kPixelBytes}) +
             ", " + F(flag);
  }
  // dY lands transposed, [cout][position] (4-byte rows): one copy per cout block when the
  // lines are contiguous positions (w == wo), else one per line; a short block signals the
  // copies it leaves out, so every block adds the same count.
  const bool whole = s.w == s.wo;
  int64_t issued = 0;
  auto copy = [&](int64_t c, int64_t co, int64_t first_line, int64_t n_lines) {
    const int64_t r = first_line - c * p.rows;
    a.AddImm(kT1, kNext, p.sd + (c * p.coutb + co) * kStageTileBytes + r * s.w * 4);
    a.AddImm(kT2, kDySrc, (first_line * s.wo * s.cout + co * kMxuEdge) * 4);
    a << "dma.hv " + R(kT1) + ", " + R(kT2) + ", " +
             a.Desc({n_lines * s.wo, 4, s.cout * 4, 4, p.cout_rows(co), 4, kPixelBytes}) + ", " +
             F(flag);
    ++issued;
  };
  for (int64_t co = 0; co < p.coutb; ++co)
    for (int64_t c = 0; c < p.chunks; ++c) {
      const int64_t n = std::clamp<int64_t>(lines - c * p.rows, 0, p.rows);
      if (whole && n > 0) copy(c, co, c * p.rows, n);
      for (int64_t l = 0; !whole && l < n; ++l) copy(c, co, c * p.rows + l, 1);
    }
  if (p.copies() > p.cinb + issued)
    a << "signal dma, " + F(flag) + ", " + std::to_string(p.copies() - p.cinb - issued);
}

// The next block's copies (a short last block of an image copies fewer lines), then
// kRow/kXSrc/kDySrc move to the block after it.
void EmitNextBlock(const Plan& p, ConvAsm& a, int flag) {
  const WeightGradShape& s = p.s;
  a << "wait dma, " + F(kStageFree) + ", 1";
  if (p.tail == p.lines()) {
    EmitCopies(p, a, p.lines(), flag);
  } else {
    const std::string tail = a.NewLabel("tail"), copied = a.NewLabel("copied");
    a.Li(kT3, p.blocks - 1);
    a << "beq " + R(kRow) + ", " + R(kT3) + ", " + tail;
    EmitCopies(p, a, p.lines(), flag);
    a << "jmp " + copied;
    a.Label(tail);
    EmitCopies(p, a, p.tail, flag);
    a.Label(copied);
  }
  a.AddImm(kXSrc, kXSrc, p.lines() * s.w * s.cin * 4);
  a.AddImm(kDySrc, kDySrc, p.lines() * s.wo * s.cout * 4);
  a << "addi " + R(kRow) + ", " + R(kRow) + ", 1";
  const std::string same = a.NewLabel("same_image");
  a.Li(kT1, p.blocks);
  a << "blt " + R(kRow) + ", " + R(kT1) + ", " + same << "li " + R(kRow) + ", 0";
  a.AddImm(kXSrc, kXSrc, (s.h - p.blocks * p.lines()) * s.w * s.cin * 4);
  a.AddImm(kDySrc, kDySrc, (s.ho - p.blocks * p.lines()) * s.wo * s.cout * 4);
  a.Label(same);
}

// VPU: 16 vregs from VMEM register `base` + `src` (8 rows of 128 f32 each, consecutive),
// transposed, stored from register `dst` as 16 x 8 rows: bf16 (a tile) or f32.
void Transpose(ConvAsm& a, int base, int64_t src, int dst, bool bf16) {
  for (int64_t j = 0; j < 16; ++j) {
    a.AddImm(kAddr, base, src + j * kZeroBlockBytes);
    a << "vld v" + std::to_string(j) + ", " + R(kAddr);
  }
  a << "vxpose v16, v0";
  const int64_t step = bf16 ? kZeroBlockBytes / 2 : kZeroBlockBytes;
  for (int64_t j = 0; j < 16; ++j) {
    a << std::string(bf16 ? "vst.bf16 v" : "vst v") + std::to_string(16 + j) + ", " + R(dst);
    if (j < 15) a.AddImm(dst, dst, step);
  }
}

// VPU: X rounded to bf16 and the transposed dY tiles into kBuf's tiles, once its copies
// landed and the MXUs are done with the tiles of two blocks ago.
void EmitTiles(const Plan& p, ConvAsm& a) {
  PerParity(a, [&](int par) {
    a << "wait vpu, " + F(par ? kLoaded1 : kLoaded0) + ", " + std::to_string(p.copies())
      << "wait vpu, " + F(kFree0 + par) + ", " + std::to_string(p.mxus);
  });
  a.AddImm(kT3, kBuf, p.tiles);
  EmitRoundToBf16(a, kT3, kBuf, kT2, p.cinb * p.pixels * kSlotBytes);
  a.AddImm(kT3, kBuf, p.dy_tile(0, 0));
  a.AddImm(kT1, kBuf, p.sd);
  EmitRoundToBf16(a, kT3, kT1, kT2, p.chunks * p.coutb * kTileBytes);
  ZeroVmem(a, kBuf, p.sd,
           p.chunks * p.coutb * kStageTileBytes);  // what a short block leaves unwritten
  a << "signal vpu, " + F(kStageFree) + ", 1"
    << "signal vpu, " + F(kReady) + ", 1";
}

// MXU m: per cout block it owns, the dY tile as left-hand rows against the X rows of every
// (tap, cin block) as weights.
void EmitMatmuls(const Plan& p, ConvAsm& a) {
  for (int64_t m = 0; m < p.mxus; ++m)
    for (int64_t j = 0; j < p.per_mxu; ++j) {
      const int64_t co = m + j * p.mxus;
      if (co >= p.coutb) continue;
      const std::string mx = "m" + std::to_string(m);
      a.Li(kT2, RoundUp(p.cout_rows(co), 8));
      for (int64_t c = 0; c < p.chunks; ++c) {
        a.AddImm(kT1, kBuf, p.dy_tile(c, co));
        for (int64_t cb = 0; cb < p.cinb; ++cb)
          for (int64_t t = 0; t < p.taps; ++t) {
            a.AddImm(kAddr, kBuf, p.x_rows(c, cb, t));
            a.Li(kT3, p.region(j, t, cb) * kMxuEdge);
            a << "mxu.ldw " + mx + ", " + R(kAddr)
              << "mxu.mma " + mx + ", " + R(kT1) + ", " + R(kT2) + ", " + R(kT3);
          }
      }
    }
}

// Pops every region (dW^T), transposes it in place on the VPU and copies it out.
void EmitDrain(const Plan& p, ConvAsm& a) {
  const WeightGradShape& s = p.s;
  for (int64_t m = 0; m < p.mxus; ++m) {
    for (int64_t r = 0; r < p.regions(); ++r) {
      a.Li(kT1, p.out + m * p.out_bytes + r * kStageTileBytes);
      a.Li(kT2, r * kMxuEdge);
      a.Li(kT3, kMxuEdge);
      a << "mxu.pop m" + std::to_string(m) + ", " + R(kT1) + ", " + R(kT2) + ", " + R(kT3);
    }
    a << "signal mxu" + std::to_string(m) + ", " + F(kPopped) + ", 1";
  }
  a << "wait vpu, " + F(kPopped) + ", " + std::to_string(p.mxus);
  for (int64_t m = 0; m < p.mxus; ++m)
    for (int64_t r = 0; r < p.regions(); ++r) {
      const int64_t at = p.out + m * p.out_bytes + r * kStageTileBytes;
      a.Li(kT1, at);
      Transpose(a, 0, at, kT1, false);
    }
  a << "signal vpu, " + F(kZeroed) + ", 1"
    << "wait dma, " + F(kZeroed) + ", 1";
  int64_t copies = 0;
  for (int64_t m = 0; m < p.mxus; ++m)
    for (int64_t j = 0; j < p.per_mxu; ++j) {
      const int64_t co = m + j * p.mxus;
      if (co >= p.coutb) continue;
      for (int64_t cb = 0; cb < p.cinb; ++cb) {
        a.Li(kT1, static_cast<int64_t>(s.dw) + ((cb * kMxuEdge) * s.cout + co * kMxuEdge) * 4);
        a.Li(kT2, p.out + m * p.out_bytes + p.region(j, 0, cb) * kStageTileBytes);
        a << "dma.vh " + R(kT1) + ", " + R(kT2) + ", " +
                 a.Desc({p.cin_rows(cb), p.cout_rows(co) * 4, kPixelBytes, s.cout * 4, p.taps,
                         p.cinb * kStageTileBytes, s.cin * s.cout * 4}) +
                 ", " + F(kOut);
        ++copies;
      }
    }
  a << "wait seq, " + F(kOut) + ", " + std::to_string(copies);
}

}  // namespace

std::string WeightGradKernel(const WeightGradShape& shape) {
  const Plan p = MakePlan(shape);
  const WeightGradShape& s = p.s;
  const int64_t total = s.batch * p.blocks;
  ConvAsm a(31);
  a << "# weight gradient " + std::to_string(s.batch) + "x" + std::to_string(s.h) + "x" +
           std::to_string(s.w) + "x" + std::to_string(s.cin) + " by " + std::to_string(s.ho) + "x" +
           std::to_string(s.wo) + "x" + std::to_string(s.cout) + ": " + std::to_string(total) +
           " blocks of " + std::to_string(p.lines()) + " lines (compiler/lowering/conv_wgrad.cc)";
  for (int f = kLoaded0; f <= kLoaded1; ++f)
    a << "sflag " + F(f) + ", " +
             std::to_string(f == kStageFree              ? 2
                            : f == kFree0 || f == kFree1 ? p.mxus
                                                         : 0);
  ZeroVmem(a, 0, p.zero, p.out);  // the zero tile and both buffers
  a << "signal vpu, " + F(kZeroed) + ", 1"
    << "wait seq, " + F(kZeroed) + ", 1";
  for (int64_t m = 0; m < p.mxus; ++m) {  // zero every accumulator region
    a.Li(kT1, p.zero);
    a << "mxu.ldw m" + std::to_string(m) + ", " + R(kT1);
    a.Li(kT2, kMxuEdge);
    for (int64_t r = 0; r < p.regions(); ++r) {
      a.Li(kT3, r * kMxuEdge);
      a << "mxu.mm m" + std::to_string(m) + ", " + R(kT1) + ", " + R(kT2) + ", " + R(kT3);
    }
  }
  a << "li " + R(kBlock) + ", 0"
    << "li " + R(kRow) + ", 0"
    << "li " + R(kParity) + ", 0";
  a.Li(kXSrc, static_cast<int64_t>(s.x));
  a.Li(kDySrc, static_cast<int64_t>(s.dy));
  a.Li(kBuf, p.buf[0]);
  a.Li(kOther, p.buf[1]);
  a.Li(kNext, p.buf[0]);
  // The VPU prepares block i + 1 and the DMA copies block i + 2 while the MXUs multiply
  // block i: both are queued before block i's matmuls (which fill the MXU queues).
  EmitNextBlock(p, a, kLoaded0);
  EmitTiles(p, a);
  if (total > 1) {
    a.Li(kNext, p.buf[1]);
    EmitNextBlock(p, a, kLoaded1);
  }
  auto swap_buffers = [&] {
    a << "li " + R(kT1) + ", 1"
      << "xor " + R(kParity) + ", " + R(kParity) + ", " + R(kT1) << "mov " + R(kT1) + ", " + R(kBuf)
      << "mov " + R(kBuf) + ", " + R(kOther) << "mov " + R(kOther) + ", " + R(kT1);
  };
  auto unless_past = [&](int64_t ahead, const std::function<void()>& body) {
    const std::string skip = a.NewLabel("past_end");
    a.AddImm(kT1, kBlock, ahead);
    a.Li(kT2, total);
    a << "bge " + R(kT1) + ", " + R(kT2) + ", " + skip;
    body();
    a.Label(skip);
  };
  a.Label("block");
  a << "wait seq, " + F(kReady) + ", 1";
  unless_past(1, [&] {
    swap_buffers();
    EmitTiles(p, a);
    swap_buffers();
  });
  unless_past(2, [&] {
    a << "mov " + R(kNext) + ", " + R(kBuf);
    PerParity(a, [&](int par) { EmitNextBlock(p, a, par ? kLoaded1 : kLoaded0); });
  });
  EmitMatmuls(p, a);
  PerParity(a, [&](int par) {
    for (int64_t m = 0; m < p.mxus; ++m)
      a << "signal mxu" + std::to_string(m) + ", " + F(kFree0 + par) + ", 1";
  });
  swap_buffers();
  a << "addi " + R(kBlock) + ", " + R(kBlock) + ", 1";
  a.Li(kT1, total);
  a << "blt " + R(kBlock) + ", " + R(kT1) + ", block";
  EmitDrain(p, a);
  for (int f = kLoaded0; f <= kLoaded1; ++f) a << "sflag " + F(f) + ", 0";  // every unit is done
  a << "halt";
  return ".tag \"" + s.tag + "\"\n" + a.Text();
}

void CheckWeightGradShape(const WeightGradShape& shape) { MakePlan(shape); }

}  // namespace tpusim::lowering
