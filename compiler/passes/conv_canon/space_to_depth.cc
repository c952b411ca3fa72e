// The space-to-depth rewrites of strided convolutions over few channels (space_to_depth.h).
#include "compiler/passes/conv_canon/space_to_depth.h"

#include <map>
#include <tuple>

#include "compiler/passes/conv_canon/conv_canon_build.h"
#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

// Images already folded in this computation: (image, rounded to bf16, s, rows pad, columns
// pad) -> S(pad(X)).
using ImageKey =
    std::tuple<const HloInstruction*, bool, int64_t, int64_t, int64_t, int64_t, int64_t>;
using ImageCache = std::map<ImageKey, HloInstruction*>;

// The padding of one spatial dimension of X: the window's low padding, then as much high
// padding (negative: cropping) as makes `blocks` blocks of s positions.
struct BlockPad {
  int64_t low = 0, high = 0;
};

BlockPad PadToBlocks(int64_t in, int64_t blocks, int64_t s, const hlo::WindowDim& w) {
  return {w.pad_low, s * blocks - in - w.pad_low};
}

// At DEFAULT precision the MXU rounds f32 operands to bf16 (one pass; the evaluator does
// the same), so rounding `x` before the convolution keeps its values and halves what the
// fold moves and the convolution reads; done where the elementwise kernels convert it
// exactly (whole vregs: the condition under which they read bf16 exactly too).
bool RoundsToBf16(const ConvRewriteBuilder& b, const HloInstruction& conv,
                  const HloInstruction& x) {
  if (x.shape().type != hlo::PrimitiveType::kF32 || !b.kernels().ExactBf16Reads(x.shape()))
    return false;
  if (const hlo::WordList* p = conv.GetWordList("operand_precision"))
    for (const std::string& w : *p)
      if (w != "default") return false;
  return true;
}

// S(pad(X)) for NHWC X, operand 0 of `conv`: [N, H, W, C] -> [N, H' / s, W' / s, s * s * C],
// channel (i, j, c); rounded to bf16 first where the convolution would round it.
HloInstruction* FoldImage(ConvRewriteBuilder& b, const HloInstruction& conv, int64_t s, BlockPad py,
                          BlockPad px, ImageCache& cache) {
  HloInstruction* x = conv.operand(0);
  const bool round = RoundsToBf16(b, conv, *x);
  const ImageKey key{x, round, s, py.low, py.high, px.low, px.high};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (round) x = b.Convert(x, hlo::PrimitiveType::kBF16);
  const std::vector<int64_t>& d = x->shape().dims;
  HloInstruction* cropped = b.Slice(x, {{0, d[0], 1},
                                        {0, d[1] + std::min<int64_t>(py.high, 0), 1},
                                        {0, d[2] + std::min<int64_t>(px.high, 0), 1},
                                        {0, d[3], 1}});
  HloInstruction* padded = b.Pad(cropped, {{},
                                           {py.low, std::max<int64_t>(py.high, 0), 0},
                                           {px.low, std::max<int64_t>(px.high, 0), 0},
                                           {}});
  const std::vector<int64_t>& p = padded->shape().dims;
  HloInstruction* blocks = b.Bitcast(padded, {p[0], p[1] / s, s, p[2] / s, s, p[3]});
  HloInstruction* moved = b.Transpose(blocks, {0, 1, 3, 2, 4, 5});
  HloInstruction* image = b.Bitcast(moved, {p[0], p[1] / s, p[2] / s, s * s * p[3]});
  cache[key] = image;
  return image;
}

// The common stride s of a two-dimensional window whose `field` (stride or rhs_dilate) is s
// in both dimensions and which has nothing else but padding; 0 if it has not.
int64_t CommonStep(const hlo::Window* win, int64_t hlo::WindowDim::*field) {
  if (!win || win->dims.size() != 2) return 0;
  const int64_t s = win->dims[0].*field;
  for (const hlo::WindowDim& w : win->dims) {
    if (w.*field != s || w.reversal || w.lhs_dilate != 1 || w.pad_low < 0) return 0;
    if (field == &hlo::WindowDim::stride ? w.rhs_dilate != 1 : w.stride != 1) return 0;
  }
  return s >= 2 ? s : 0;
}

hlo::Window StrideOne(int64_t rows, int64_t cols) {
  hlo::Window w;
  w.dims.resize(2);
  w.dims[0].size = rows, w.dims[1].size = cols;
  return w;
}

// Y = conv(X, W, stride s) -> conv(S(pad(X)), S'(W), stride 1).
HloInstruction* Forward(const HloInstruction& conv, ConvRewriteBuilder& b, int64_t limit,
                        ImageCache& cache) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  const int64_t s = CommonStep(win, &hlo::WindowDim::stride);
  if (!cd || cd->labels != "b01f_01io->b01f" || s == 0) return nullptr;
  HloInstruction *x = conv.operand(0), *w = conv.operand(1);
  const std::vector<int64_t>&xd = x->shape().dims, &wd = w->shape().dims, &out = conv.shape().dims;
  if (s * s * xd[3] >= limit || (wd[0] == 1 && wd[1] == 1)) return nullptr;
  BlockPad pads[2];
  int64_t taps[2];
  for (int d = 0; d < 2; ++d) {
    taps[d] = CeilDiv(wd[d], s);
    pads[d] = PadToBlocks(xd[d + 1], out[d + 1] - 1 + taps[d], s, win->dims[d]);
  }
  HloInstruction* image = FoldImage(b, conv, s, pads[0], pads[1], cache);
  HloInstruction* kernel =
      b.Pad(w, {{0, s * taps[0] - wd[0], 0}, {0, s * taps[1] - wd[1], 0}, {}, {}});
  kernel = b.Bitcast(kernel, {taps[0], s, taps[1], s, wd[2], wd[3]});
  kernel = b.Transpose(kernel, {0, 2, 1, 3, 4, 5});
  kernel = b.Bitcast(kernel, {taps[0], taps[1], s * s * wd[2], wd[3]});
  return b.Conv(image, kernel, StrideOne(taps[0], taps[1]), out, "folded");
}

// dW = conv(X, dY, rhs_dilate s) -> slice(D(conv(S(pad(X)), dY))).
HloInstruction* WeightGrad(const HloInstruction& conv, ConvRewriteBuilder& b, int64_t limit,
                           ImageCache& cache) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  const int64_t s = CommonStep(win, &hlo::WindowDim::rhs_dilate);
  if (!cd || cd->labels != "f01b_i01o->01bf" || s == 0) return nullptr;
  HloInstruction *x = conv.operand(0), *dy = conv.operand(1);
  const std::vector<int64_t>&xd = x->shape().dims, &dyd = dy->shape().dims,
        &out = conv.shape().dims;
  if (s * s * xd[3] >= limit) return nullptr;
  BlockPad pads[2];
  int64_t taps[2];
  for (int d = 0; d < 2; ++d) {
    if (win->dims[d].size != dyd[d + 1]) return nullptr;
    taps[d] = CeilDiv(out[d], s);
    pads[d] = PadToBlocks(xd[d + 1], taps[d] + dyd[d + 1] - 1, s, win->dims[d]);
  }
  HloInstruction* image = FoldImage(b, conv, s, pads[0], pads[1], cache);
  HloInstruction* grad = b.Conv(image, dy, StrideOne(dyd[1], dyd[2]),
                                {taps[0], taps[1], s * s * xd[3], out[3]}, "folded");
  if (!grad) return nullptr;
  grad = b.Bitcast(grad, {taps[0], taps[1], s, s, xd[3], out[3]});
  grad = b.Transpose(grad, {0, 2, 1, 3, 4, 5});
  grad = b.Bitcast(grad, {s * taps[0], s * taps[1], xd[3], out[3]});
  return b.Finish(b.Slice(grad, {{0, out[0], 1}, {0, out[1], 1}, {0, out[2], 1}, {0, out[3], 1}}));
}

using Rewrite = HloInstruction* (*)(const HloInstruction&, ConvRewriteBuilder&, int64_t,
                                    ImageCache&);

}  // namespace

hlo::Result<bool> SpaceToDepthPass::Run(hlo::HloModule& module) {
  const int64_t limit = target_.FoldedConvolutionChannels();
  if (limit == 0) return false;
  ModuleEdits edits;
  for (const auto& c : module.computations()) {
    ImageCache cache;                               // images folded in `c`
    const size_t count = c->instructions().size();  // rewrites append to `c`
    for (size_t k = 0; k < count; ++k) {
      HloInstruction& conv = *c->instructions()[k];
      if (conv.opcode() != hlo::Opcode::kConvolution || conv.operand_count() != 2 ||
          !conv.shape().IsArray() || conv.shape().rank() != 4)
        continue;
      for (Rewrite r : {&Forward, &WeightGrad}) {
        // Tried on a scratch computation first: a rewrite that gives up leaves nothing behind.
        hlo::HloComputation scratch("scratch");
        ConvRewriteBuilder trial(scratch, conv, target_);
        ImageCache trial_cache;
        if (!r(conv, trial, limit, trial_cache)) continue;
        ConvRewriteBuilder build(*c, conv, target_);
        HloInstruction* value = r(conv, build, limit, cache);
        if (!value)
          return hlo::Status::Error("%" + conv.name() +
                                    ": space-to-depth failed on its second build");
        edits.replace[&conv] = value;
        break;
      }
    }
  }
  if (edits.empty()) return false;
  if (hlo::Status s = ApplyEdits(module, edits); !s.ok()) return s;
  return true;
}

}  // namespace tpusim::passes
