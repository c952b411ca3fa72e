// Weight gradients (`f01b_i01o->01bf`) with padding or window dilation, rewritten into
// unpadded stride-1 weight gradients (see conv_canon.h). Along one spatial dimension, with
// input X (padded by pad_low), output gradient dY of n positions and window dilation s
// (the forward stride):
//   dW[k] = sum_j X[k + s j - pad_low] dY[j].
// Taps k = p + s q of phase p read the phase image P_p[i] = X[p + s i - pad_low]:
//   dW[p + s q] = sum_j P_p[q + j] dY[j],
// an unpadded stride-1 weight gradient with n_q = ceil((K - p) / s) taps over a phase image
// of n_q + n - 1 positions: a strided slice of X, padded with zeros where it leaves X.
#include <algorithm>
#include <vector>

#include "compiler/passes/conv_canon/conv_canon.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

struct WgradPhase {
  int64_t phase = 0, taps = 0;
  hlo::SliceDim slice;  // of X
  hlo::PadDim pad;      // of the slice: the phase image
  hlo::PadDim place;    // of the phase's gradient: its taps' places in dW
};

// The phases along one spatial dimension: X of `in` positions, dW of `k` taps, dY of `n`.
// Empty when some phase image lies wholly in the padding.
std::vector<WgradPhase> Phases(int64_t in, int64_t k, int64_t n, const hlo::WindowDim& w) {
  const int64_t s = w.rhs_dilate, pl = w.pad_low;
  std::vector<WgradPhase> out;
  for (int64_t p = 0; p < std::min(s, k); ++p) {
    WgradPhase ph;
    ph.phase = p, ph.taps = CeilDiv(k - p, s);
    const int64_t len = ph.taps + n - 1;  // phase image positions i: X[p + s i - pl]
    const int64_t lo = std::max<int64_t>(0, CeilDiv(pl - p, s));
    const int64_t hi = std::min(len - 1, FloorDiv(in - 1 - p + pl, s));
    if (lo > hi) return {};
    ph.slice = {p + s * lo - pl, p + s * hi - pl + 1, s};
    ph.pad = {lo, len - 1 - hi, 0};
    ph.place = {p, k - (p + s * (ph.taps - 1)) - 1, s - 1};
    out.push_back(ph);
  }
  return out;
}

}  // namespace

HloInstruction* RewriteNarrowWeightGrad(const HloInstruction& conv, ConvRewriteBuilder& b) {
  if (b.Accumulation() == conv.shape().type) return nullptr;
  return b.Finish(
      b.Conv(conv.operand(0), conv.operand(1), *conv.window(), conv.shape().dims, "wide"));
}

HloInstruction* RewriteWeightGrad(const HloInstruction& conv, ConvRewriteBuilder& b) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  if (!cd || cd->labels != "f01b_i01o->01bf" || !win || win->dims.size() != 2) return nullptr;
  HloInstruction *x = conv.operand(0), *dy = conv.operand(1);
  const std::vector<int64_t>&xd = x->shape().dims, &dyd = dy->shape().dims,
        &out = conv.shape().dims;
  for (int d = 0; d < 2; ++d) {
    const hlo::WindowDim& w = win->dims[d];
    if (w.stride != 1 || w.lhs_dilate != 1 || w.reversal || w.size != dyd[d + 1]) return nullptr;
  }
  const std::vector<WgradPhase> ys = Phases(xd[1], out[0], dyd[1], win->dims[0]);
  const std::vector<WgradPhase> xs = Phases(xd[2], out[1], dyd[2], win->dims[1]);
  if (ys.empty() || xs.empty()) return nullptr;
  hlo::Window unpadded;
  unpadded.dims.resize(2);
  unpadded.dims[0].size = dyd[1], unpadded.dims[1].size = dyd[2];
  HloInstruction* sum = nullptr;
  for (const WgradPhase& py : ys) {
    for (const WgradPhase& px : xs) {
      HloInstruction* image = b.Slice(x, {{0, xd[0], 1}, py.slice, px.slice, {0, xd[3], 1}});
      image = b.Pad(image, {{}, py.pad, px.pad, {}});
      HloInstruction* grad = b.Conv(image, dy, unpadded, {py.taps, px.taps, out[2], out[3]});
      if (!grad) return nullptr;
      HloInstruction* placed = b.Pad(grad, {py.place, px.place, {}, {}});
      sum = sum ? b.Add(sum, placed) : placed;
    }
  }
  return b.Finish(sum);
}

}  // namespace tpusim::passes
