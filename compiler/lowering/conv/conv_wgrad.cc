// Per block of output-gradient lines (the contraction: positions (line, column) over the
// input's padded width, at most 128, so a tap's X rows are 128 consecutive staged pixels):
// DMA brings the block's X rows (with the kernel's halo; per phase image when dilated) and
// dY into staging areas; the VPU puts X into bf16 tiles (rounding f32) and dY into
// [128 cout, 128 positions] bf16 tiles (DMA-transposed f32, or rows it transposes with
// vxpose). Each MXU takes cout blocks: per tap and cin block, the X rows from the tap's
// offset are the weights and the dY tile the left-hand rows, accumulating dW^T. Columns past
// the output width have zero dY, so what X holds there does not count. Blocks loop; tiles
// alternate between two buffers so the VPU prepares block i + 1 while the MXUs multiply
// block i. At the end the VPU transposes the popped results. Work beyond the accumulators
// runs as passes over channel blocks, one after the other; few input channels fold the
// taps into the columns (conv_wgrad_plan.h).
#include "compiler/lowering/conv/conv_wgrad.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/lowering/conv/conv_emit.h"
#include "compiler/lowering/conv/conv_wgrad_emit.h"

namespace tpusim::lowering {
namespace wgrad {

void ZeroVmem(ConvAsm& a, int base, int64_t offset, int64_t bytes) {
  a << "vmovi v0, 0.0";
  a.AddImm(kT1, base, offset);
  a.Li(kT2, bytes / kZeroBlockBytes);
  a << "vloop " + R(kT2) + ", 1"
    << "vsts v0, " + R(kT1) + ", " + std::to_string(kZeroBlockBytes);
}

void Transpose(ConvAsm& a, int base, int64_t src, int dst, bool bf16, bool from_bf16) {
  const int64_t vreg_bytes = from_bf16 ? kZeroBlockBytes / 2 : kZeroBlockBytes;
  for (int64_t j = 0; j < 16; ++j) {
    a.AddImm(kAddr, base, src + j * vreg_bytes);
    a << std::string(from_bf16 ? "vld.bf16 v" : "vld v") + std::to_string(j) + ", " + R(kAddr);
  }
  a << "vxpose v16, v0";
  const int64_t step = bf16 ? kZeroBlockBytes / 2 : kZeroBlockBytes;
  for (int64_t j = 0; j < 16; ++j) {
    a << std::string(bf16 ? "vst.bf16 v" : "vst v") + std::to_string(16 + j) + ", " + R(dst);
    if (j < 15) a.AddImm(dst, dst, step);
  }
}

void EmitPopRegions(ConvAsm& a, int64_t mxus, int64_t regions, int64_t out, int64_t out_bytes,
                    int popped) {
  for (int64_t m = 0; m < mxus; ++m) {
    for (int64_t r = 0; r < regions; ++r) {
      a.Li(kT1, out + m * out_bytes + r * kStageTileBytes);
      a.Li(kT2, r * kMxuEdge);
      a.Li(kT3, kMxuEdge);
      a << "mxu.pop m" + std::to_string(m) + ", " + R(kT1) + ", " + R(kT2) + ", " + R(kT3);
    }
    a << "signal mxu" + std::to_string(m) + ", " + F(popped) + ", 1";
  }
  a << "wait vpu, " + F(popped) + ", " + std::to_string(mxus);
}

void EmitAddPartialSums(ConvAsm& a, int64_t out, int64_t out_bytes) {
  a.Li(kT1, out);
  a.Li(kT3, out + out_bytes);
  a.Li(kT2, out_bytes / kZeroBlockBytes);
  const std::string step = std::to_string(kZeroBlockBytes);
  a << "vloop " + R(kT2) + ", 4"
    << "vlds v0, " + R(kT1) + ", " + step << "vlds v1, " + R(kT3) + ", " + step << "vadd v0, v0, v1"
    << "vsts v0, " + R(kT1) + ", " + step;
}

namespace {

using conv::EmitRoundToBf16;

int64_t RoundUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

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

// VPU: X rounded to bf16 and the transposed dY tiles into kBuf's tiles, once its copies
// landed and the MXUs are done with the tiles of two blocks ago. dY as rows: the sequencer
// feeds the transposes one instruction at a time, so `between(c)` emits other units' work
// (the MXUs' matmuls) after tile c's.
void EmitTiles(const Plan& p, ConvAsm& a, const std::function<void(int64_t)>& between) {
  PerParity(a, [&](int par) {
    a << "wait vpu, " + F(par ? kLoaded1 : kLoaded0) + ", " + std::to_string(p.copies())
      << "wait vpu, " + F(kFree0 + par) + ", " + std::to_string(p.mxus);
  });
  auto round_x = [&] {  // bf16 staging is already in the tiles' layout: copied as it is
    a.AddImm(kT3, kBuf, p.tiles);
    EmitRoundToBf16(a, kT3, kBuf, kT2, p.x_tile_bytes(), p.s.bf16);
  };
  if (p.dy_rows) {  // [position][cout] to bf16 [cout][position], tile by tile
    for (int64_t c = 0; c < p.chunks; ++c) {
      for (int64_t co = 0; co < p.coutb; ++co) {
        a.AddImm(kT1, kBuf, p.dy_tile(c, co));
        Transpose(a, kBuf, p.sd + (c * p.coutb + co) * p.dy_stage_tile(), kT1, true, p.s.bf16);
      }
      between(c);
    }
    round_x();  // one loop: queued last, it holds nothing up
  } else {
    round_x();
    a.AddImm(kT3, kBuf, p.dy_tile(0, 0));
    a.AddImm(kT1, kBuf, p.sd);
    EmitRoundToBf16(a, kT3, kT1, kT2, p.chunks * p.coutb * kTileBytes);
  }
  if (!p.dy_rows || p.tail != p.lines())  // what a short last block leaves unwritten
    ZeroVmem(a, kBuf, p.sd, p.chunks * p.coutb * p.dy_stage_tile());
  a << "signal vpu, " + F(kStageFree) + ", 1"
    << "signal vpu, " + F(kReady) + ", 1";
}

// The matmuls of K tile c (-1: every tile, MXU by MXU) of the block in buffer register
// `buf`: MXU m, per cout block it owns, the dY tile as left-hand rows against the X rows
// of every (tap, cin block) as weights; for one tile the MXUs take turns, so both queues
// fill. With k_split, only MXU c mod 2 takes tile c.
void EmitMatmuls(const Plan& p, ConvAsm& a, int buf, int64_t c) {
  if (c < 0) {
    for (int64_t m = 0; m < p.mxus; ++m)
      for (int64_t j = 0; j < p.per_mxu; ++j) {
        const int64_t co = p.k_split ? 0 : m + j * p.mxus;
        if (co >= p.coutb) continue;
        const std::string mx = "m" + std::to_string(m);
        a.Li(kT2, RoundUp(p.cout_rows(co), 8));
        for (int64_t k = p.k_split ? m : 0; k < p.chunks; k += p.k_split ? 2 : 1) {
          a.AddImm(kT1, buf, p.dy_tile(k, co));
          for (int64_t cb = 0; cb < p.cinb; ++cb)
            for (int64_t t = 0; t < p.staged_taps(); ++t) {
              a.AddImm(kAddr, buf, p.x_rows(k, cb, t));
              a.Li(kT3, p.region(j, t, cb) * kMxuEdge);
              a << "mxu.ldw " + mx + ", " + R(kAddr)
                << "mxu.mma " + mx + ", " + R(kT1) + ", " + R(kT2) + ", " + R(kT3);
            }
        }
      }
    return;
  }
  for (int64_t j = 0; j < p.per_mxu; ++j) {
    std::vector<int64_t> mxus;
    for (int64_t m = 0; m < p.mxus; ++m) {
      const int64_t co = p.k_split ? 0 : m + j * p.mxus;
      if (co >= p.coutb || (p.k_split && c % 2 != m)) continue;
      mxus.push_back(m);
      a.AddImm(kLhs0 + static_cast<int>(m), buf, p.dy_tile(c, co));
      a.Li(kRows0 + static_cast<int>(m), RoundUp(p.cout_rows(co), 8));
    }
    for (int64_t cb = 0; cb < p.cinb; ++cb)
      for (int64_t t = 0; t < p.staged_taps(); ++t) {
        a.AddImm(kAddr, buf, p.x_rows(c, cb, t));
        a.Li(kT3, p.region(j, t, cb) * kMxuEdge);
        for (int64_t m : mxus) {
          const std::string mx = "m" + std::to_string(m);
          a << "mxu.ldw " + mx + ", " + R(kAddr)
            << "mxu.mma " + mx + ", " + R(kLhs0 + m) + ", " + R(kRows0 + m) + ", " + R(kT3);
        }
      }
  }
}

// Pops every region (dW^T), transposes it in place on the VPU and copies it out.
void EmitDrain(const Plan& p, ConvAsm& a) {
  const WeightGradShape& s = p.s;
  EmitPopRegions(a, p.mxus, p.regions(), p.out, p.out_bytes, kPopped);
  for (int64_t m = 0; m < p.mxus && !s.transposed_out; ++m)
    for (int64_t r = 0; r < p.regions(); ++r) {
      const int64_t at = p.out + m * p.out_bytes + r * kStageTileBytes;
      a.Li(kT1, at);
      Transpose(a, 0, at, kT1, false);
    }
  if (p.k_split) EmitAddPartialSums(a, p.out, p.out_bytes);
  a << "signal vpu, " + F(kZeroed) + ", 1"
    << "wait dma, " + F(kZeroed) + ", 1";
  int64_t copies = 0;
  for (int64_t m = 0; m < (p.k_split ? 1 : p.mxus); ++m)
    for (int64_t j = 0; j < p.per_mxu; ++j) {
      const int64_t co = m + j * p.mxus;
      if (co >= p.coutb) continue;
      for (int64_t cb = 0; cb < p.cinb; ++cb) {
        // dW rows: one tap's cin rows per region (taps are planes), or folded taps x cin;
        // transposed_out (1x1): the popped [cout][cin] rows as they are.
        const int64_t row = s.transposed_out
                                ? (p.cout_lo + co) * kMxuEdge * s.cin + p.cin_row0(cb)
                                : p.cin_row0(cb) * s.cout + (p.cout_lo + co) * kMxuEdge;
        a.Li(kT1, static_cast<int64_t>(s.dw) + row * 4);
        a.Li(kT2, p.out + m * p.out_bytes + p.region(j, 0, cb) * kStageTileBytes);
        const DescShape d =
            s.transposed_out
                ? DescShape{p.cout_rows(co), p.cin_rows(cb) * 4, kPixelBytes, s.cin * 4}
                : DescShape{p.cin_rows(cb),    p.cout_rows(co) * 4, kPixelBytes,
                            s.cout * 4,        p.staged_taps(),     p.cinb * kStageTileBytes,
                            s.cin * s.cout * 4};
        a << "dma.vh " + R(kT1) + ", " + R(kT2) + ", " + a.Desc(d) + ", " + F(kOut);
        ++copies;
      }
    }
  a << "wait seq, " + F(kOut) + ", " + std::to_string(copies);
}

// One pass: zero the accumulators, loop over every block of positions, drain.
void EmitPass(const Plan& p, ConvAsm& a) {
  const WeightGradShape& s = p.s;
  const int64_t total = s.batch * p.blocks;
  a << "# pass: cin blocks " + std::to_string(p.cin_lo) + "+" + std::to_string(p.cinb) +
           ", cout blocks " + std::to_string(p.cout_lo) + "+" + std::to_string(p.coutb) + ", " +
           std::to_string(total) + " blocks of " + std::to_string(p.lines()) + " lines";
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
  EmitTiles(p, a, [](int64_t) {});
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
  const std::string block = a.NewLabel("block");
  a.Label(block);
  a << "wait seq, " + F(kReady) + ", 1";
  auto copies = [&] {  // of block i + 2, into the buffer of block i (kBuf)
    unless_past(2, [&] {
      a << "mov " + R(kNext) + ", " + R(kBuf);
      PerParity(a, [&](int par) { EmitNextBlock(p, a, par ? kLoaded1 : kLoaded0); });
    });
  };
  if (!p.dy_rows) {
    // The VPU's few loops on block i + 1, the copies of block i + 2, block i's matmuls.
    unless_past(1, [&] {
      swap_buffers();
      EmitTiles(p, a, [](int64_t) {});
      swap_buffers();
    });
    copies();
    EmitMatmuls(p, a, kBuf, -1);
  } else {
    // The sequencer feeds the VPU's transposes of block i + 1 one instruction at a time:
    // the copies of block i + 2 go first, block i's matmuls in between the transposes.
    copies();
    const std::string last = a.NewLabel("last_block"), issued = a.NewLabel("issued");
    a.AddImm(kT1, kBlock, 1);
    a.Li(kT2, total);
    a << "bge " + R(kT1) + ", " + R(kT2) + ", " + last;
    swap_buffers();  // kBuf: block i + 1, kOther: block i
    EmitTiles(p, a, [&](int64_t c) { EmitMatmuls(p, a, kOther, c); });
    swap_buffers();
    a << "jmp " + issued;
    a.Label(last);
    for (int64_t c = 0; c < p.chunks; ++c) EmitMatmuls(p, a, kBuf, c);
    a.Label(issued);
  }
  PerParity(a, [&](int par) {
    for (int64_t m = 0; m < p.mxus; ++m)
      a << "signal mxu" + std::to_string(m) + ", " + F(kFree0 + par) + ", 1";
  });
  swap_buffers();
  a << "addi " + R(kBlock) + ", " + R(kBlock) + ", 1";
  a.Li(kT1, total);
  a << "blt " + R(kBlock) + ", " + R(kT1) + ", " + block;
  EmitDrain(p, a);
  for (int f = kLoaded0; f <= kLoaded1; ++f) a << "sflag " + F(f) + ", 0";  // every unit is done
}

}  // namespace
}  // namespace wgrad

std::string WeightGradKernel(const WeightGradShape& shape) {
  const std::vector<wgrad::Plan> passes = wgrad::PlanPasses(shape);
  const WeightGradShape& s = shape;
  const wgrad::Plan& p = passes.front();
  ConvAsm a(31);
  a << "# weight gradient " + std::to_string(s.batch) + "x" + std::to_string(s.h) + "x" +
           std::to_string(s.w) + "x" + std::to_string(s.cin) + " by " + std::to_string(s.ho) + "x" +
           std::to_string(s.wo) + "x" + std::to_string(s.cout) + ": " +
           std::to_string(passes.size()) + (passes.size() == 1 ? " pass" : " passes") +
           (p.fold ? ", taps folded" : "") + " (compiler/lowering/conv/conv_wgrad.cc)";
  for (const wgrad::Plan& pass : passes) wgrad::EmitPass(pass, a);
  a << "halt";
  return ".tag \"" + s.tag + "\"\n" + a.Text();
}

void CheckWeightGradShape(const WeightGradShape& shape) { wgrad::PlanPasses(shape); }

}  // namespace tpusim::lowering
