// The convolution program: preamble, then a loop over chunks (input copied one chunk
// ahead), and per chunk a loop over cout blocks whose accumulator regions and output
// buffers alternate, so pops and copies out overlap the next block's matmuls.
#include "compiler/lowering/conv/conv_kernel.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/lowering/conv/conv_emit.h"

namespace tpusim::lowering {
namespace {

using namespace conv;

// Branches on the kind index in `kind_reg` and emits `body(kind)` for each kind.
void PerKind(const ConvPlan& p, ConvAsm& a, int kind_reg,
             const std::function<void(int64_t)>& body) {
  const int64_t kinds = static_cast<int64_t>(p.kinds.size());
  const std::string done = a.NewLabel("kind_done");
  std::vector<std::string> labels;
  for (int64_t k = 0; k + 1 < kinds; ++k) {
    labels.push_back(a.NewLabel("kind"));
    a.Li(kScratch, k);
    a << "beq " + R(kind_reg) + ", " + R(kScratch) + ", " + labels.back();
  }
  body(kinds - 1);
  for (int64_t k = 0; k + 1 < kinds; ++k) {
    a << "jmp " + done;
    a.Label(labels[k]);
    body(k);
  }
  a.Label(done);
}

// Part `group` of `groups` of the next chunk's copies into kInNext; the first part waits
// until every MXU is done with that buffer.
// f32 input: the copies land in the staging area (free once the VPU has read it), and
// after the last part the VPU rounds the area into kInNext once the MXUs are done with it.
void EmitPrefetch(const ConvPlan& p, ConvAsm& a, int64_t group, int64_t groups) {
  const bool staged = p.s.input_f32, last = group + 1 == groups;
  if (group == 0) {
    if (staged)
      a << "wait dma, " + F(kStageFree) + ", 1";
    else
      for (int64_t m = 0; m < p.mxus; ++m) a << "wait dma, " + F(kInFree + m) + ", 1";
    // Folded, what no copy writes is padding and must be zero. With one or two bands per
    // image each buffer always holds the same band, so the preamble's zeros stay put.
    if (p.fold && p.bands > 2) {
      a.Li(kTmp2, p.zero_block);
      if (staged) a.Li(kTmp, p.stage);
      const int64_t rows = p.in_buf_bytes * p.in_scale() / kZeroBlockBytes;
      a << "dma.vv " + R(staged ? kTmp : kInNext) + ", " + R(kTmp2) + ", " +
               a.Desc({rows, kZeroBlockBytes, 0, kZeroBlockBytes}) + ", " + F(kZeroFill)
        << "wait dma, " + F(kZeroFill) + ", 1";
    }
  }
  a << "sld " + R(kTmp) + ", " + R(kNextBand) + ", 4";
  PerKind(p, a, kTmp, [&](int64_t k) {
    if (p.raw && group == 0) EmitRawCopy(p, a, k);
    EmitInputCopies(p, a, k, group, groups);
    if (!staged || !last) return;
    for (int64_t m = 0; m < p.mxus; ++m) a << "wait vpu, " + F(kInFree + m) + ", 1";
    a << "wait vpu, " + F(kInLoaded) + ", " + std::to_string(InputCopies(p, k).size());
  });
  if (!staged || !last) return;
  a.Li(kTmp2, p.stage);
  EmitRoundToBf16(a, kInNext, kTmp2, kTmp, p.in_buf_bytes);
  a << "signal vpu, " + F(kStageFree) + ", 1"
    << "signal vpu, " + F(kConverted) + ", 1";
}

// Copies queue behind the DMA unit's waits; spread over the points of the cout steps
// (EmitTaps), a chunk's copies never fill the queue, so the sequencer keeps feeding the MXUs.
int64_t PrefetchPoints(const ConvPlan& p) {
  return p.cinb + static_cast<int64_t>(p.taps.size()) - 1;
}

int64_t PrefetchGroups(const ConvPlan& p) {
  int64_t most = 1;
  for (size_t k = 0; k < p.kinds.size(); ++k)
    most = std::max<int64_t>(most, InputCopies(p, static_cast<int64_t>(k)).size());
  return std::min(p.cout_steps() * PrefetchPoints(p), most);
}

// At point `point` of cout step g / points, in a chunk that has a next one: part g of the
// next chunk's copies, for every g with g % points == point; `in_cin_loop`: only when
// kCount == point.
void EmitPrefetchAt(const ConvPlan& p, ConvAsm& a, int64_t point, bool in_cin_loop) {
  const int64_t groups = PrefetchGroups(p), points = PrefetchPoints(p);
  for (int64_t g = point; g < groups; g += points) {
    const std::string skip = a.NewLabel("no_prefetch");
    if (in_cin_loop) {
      a.Li(kTmp, point);
      a << "bne " + R(kCount) + ", " + R(kTmp) + ", " + skip;
    }
    a.Li(kTmp, g / points);
    a << "bne " + R(kCo) + ", " + R(kTmp) + ", " + skip
      << "addi " + R(kTmp) + ", " + R(kChunk) + ", 1";
    a.Li(kTmp2, p.chunks);
    a << "bge " + R(kTmp) + ", " + R(kTmp2) + ", " + skip;
    EmitPrefetch(p, a, g, groups);
    a.Label(skip);
  }
}

void EmitSpreadPrefetch(const ConvPlan& p, ConvAsm& a, int64_t point, bool in_cin_loop) {
  if (!in_cin_loop) return EmitPrefetchAt(p, a, point, false);
  for (int64_t cb = 1; cb < p.cinb; ++cb) EmitPrefetchAt(p, a, cb, true);
}

// kNextBand/kNextSrc move to the chunk after the next.
void AdvanceNext(const ConvPlan& p, ConvAsm& a) {
  const int64_t band_rows = p.band * p.s.stride * p.hbm_row_bytes();
  const std::string same = a.NewLabel("same_images");
  a << "addi " + R(kNextBand) + ", " + R(kNextBand) + ", 8";
  a.AddImm(kNextSrc, kNextSrc, band_rows);
  a.Li(kTmp, 8 * p.bands);
  a << "blt " + R(kNextBand) + ", " + R(kTmp) + ", " + same << "li " + R(kNextBand) + ", 0";
  a.AddImm(kNextSrc, kNextSrc, p.imgs * p.hbm_image_bytes() - p.bands * band_rows);
  a.Label(same);
}

void EmitCoutBlocks(const ConvPlan& p, ConvAsm& a) {
  const int64_t taps = p.weight_taps;
  a << "li " + R(kCo) + ", 0";
  a.Label("cout_block");
  a.MulImm(kAcc, kParity, p.acc_region);
  a.MulImm(kOutBuf, kParity, p.out_buf_bytes);
  a.AddImm(kOutBuf, kOutBuf, p.out_buf[0]);
  a.MulImm(kWeights, kCo, p.blocks_per_step() * taps * p.cinb * kTileBytes);
  a.AddImm(kWeights, kWeights, p.weights);
  EmitTaps(p, a,
           [&](int64_t point, bool in_cin_loop) { EmitSpreadPrefetch(p, a, point, in_cin_loop); });
  EmitDrain(p, a);
  a << "li " + R(kTmp) + ", 1"
    << "xor " + R(kParity) + ", " + R(kParity) + ", " + R(kTmp)
    << "addi " + R(kCo) + ", " + R(kCo) + ", 1";
  a.Li(kTmp, p.cout_steps());
  a << "blt " + R(kCo) + ", " + R(kTmp) + ", cout_block";
}

}  // namespace

int64_t ConvOutputSize(const ConvShape& s) {
  return (s.h + s.pad_lo + s.pad_hi - s.kh) / s.stride + 1;
}

int64_t ConvFlops(const ConvShape& s) {
  const int64_t ow = (s.w + s.pad_lo + s.pad_hi - s.kw) / s.stride + 1;
  return 2 * s.batch * ConvOutputSize(s) * ow * s.kh * s.kw * s.cin * s.cout;
}

std::string ConvKernel(const ConvShape& shape) {
  const ConvPlan p = PlanConv(shape);
  const ConvShape& s = p.s;
  ConvAsm a(kScratch);
  a << "# convolution " + std::to_string(s.batch) + "x" + std::to_string(s.h) + "x" +
           std::to_string(s.w) + "x" + std::to_string(s.cin) + " * " + std::to_string(s.kh) + "x" +
           std::to_string(s.kw) + "x" + std::to_string(s.cout) + " stride " +
           std::to_string(s.stride) + ": " + std::to_string(p.chunks) + " chunks of " +
           std::to_string(p.imgs) + " image(s) x " + std::to_string(p.band) +
           " lines (compiler/lowering/conv/conv_kernel.cc)";
  EmitPreamble(p, a);
  EmitZeroStatistics(p, a);
  a << "li " + R(kNextBand) + ", 0";
  a.Li(kNextSrc, static_cast<int64_t>(s.input));
  a.Li(kOutPtr, static_cast<int64_t>(s.output));
  a.Li(kInNext, p.in_buf[0]);
  EmitPrefetch(p, a, 0, 1);
  a << "mov " + R(kBand) + ", " + R(kNextBand);
  AdvanceNext(p, a);
  a.Li(kInCur, p.in_buf[0]);
  a.Li(kInNext, p.in_buf[1]);
  a << "li " + R(kChunk) + ", 0"
    << "li " + R(kParity) + ", 0";
  a.Label("chunk");
  if (s.input_f32) {
    a << "wait seq, " + F(kConverted) + ", 1";
  } else {
    a << "sld " + R(kTmp) + ", " + R(kBand) + ", 4";
    PerKind(p, a, kTmp, [&](int64_t k) {
      a << "wait seq, " + F(kInLoaded) + ", " + std::to_string(InputCopies(p, k).size());
    });
  }
  a << "sld " + R(kKindTable) + ", " + R(kBand) + ", 0";
  EmitCoutBlocks(p, a);
  for (int64_t m = 0; m < p.mxus; ++m)
    a << "signal mxu" + std::to_string(m) + ", " + F(kInFree + m) + ", 1";
  a << "mov " + R(kTmp) + ", " + R(kInCur) << "mov " + R(kInCur) + ", " + R(kInNext)
    << "mov " + R(kInNext) + ", " + R(kTmp) << "mov " + R(kBand) + ", " + R(kNextBand);
  AdvanceNext(p, a);
  a.AddImm(kOutPtr, kOutPtr, p.imgs * p.band * p.ow * p.out_pixel_bytes());
  a << "addi " + R(kChunk) + ", " + R(kChunk) + ", 1";
  a.Li(kTmp, p.chunks);
  a << "blt " + R(kChunk) + ", " + R(kTmp) + ", chunk";
  EmitStoreStatistics(p, a);
  a << "halt";
  return ".tag \"" + s.tag + "\"\n" + a.Text();
}

}  // namespace tpusim::lowering
