// Input gradients (NHWC `b01f_01io->b01f` or `b01f_01oi->b01f`) with input dilation s (the
// forward stride), rewritten into stride-1 convolutions per output phase (see conv_canon.h).
// Along one spatial dimension, with dY of n positions dilated by s and padded by pad_low,
// and a kernel of k taps:
//   dX[y] = sum_t D[y + t] K[t],  D[r] = dY[(r - pad_low) / s] where that divides, else 0.
// Outputs y = a + s u of phase a see only the taps t = t0 + s j with a + t0 - pad_low = s c:
//   dX[a + s u] = sum_j dY[u + c + j] K[t0 + s j],
// a stride-1 convolution of dY with the phase's sub-kernel and pad_low = -c: no zeros of
// the dilation reach the MXUs. The phases are then interleaved into dX.
#include <algorithm>
#include <vector>

#include "compiler/passes/conv_canon/conv_canon.h"
#include "compiler/passes/conv_canon/conv_canon_phases.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

struct DgradPhase : ConvPhase {
  int64_t phase = 0;
  hlo::SliceDim kernel;  // the phase's taps
};

// The phases along one spatial dimension (those with no output positions left out): dY of
// `n` positions, kernel of `k` taps, dX of `m`.
std::vector<DgradPhase> Phases(int64_t n, int64_t k, int64_t m, const hlo::WindowDim& w) {
  const int64_t s = w.lhs_dilate, pl = w.pad_low;
  std::vector<DgradPhase> out;
  for (int64_t a = 0; a < std::min(s, m); ++a) {
    DgradPhase ph;
    ph.phase = a, ph.outputs = CeilDiv(m - a, s);
    const int64_t t0 = ((pl - a) % s + s) % s;
    ph.taps = t0 < k ? CeilDiv(k - t0, s) : 0;
    ph.kernel = {t0, t0 + s * (ph.taps - 1) + 1, s};
    ph.pad_low = -(a + t0 - pl) / s;
    ph.pad_high = ph.outputs + ph.taps - 1 - n - ph.pad_low;
    ph.place = {a, m - (a + s * (ph.outputs - 1)) - 1, s - 1};
    out.push_back(ph);
  }
  return out;
}

}  // namespace

HloInstruction* RewriteInputGrad(const HloInstruction& conv, ConvRewriteBuilder& b) {
  if (!IsNhwc2d(conv)) return nullptr;
  const hlo::Window* win = conv.window();
  for (const hlo::WindowDim& w : win->dims)
    if (w.stride != 1 || w.rhs_dilate != 1 || w.reversal) return nullptr;
  if (win->dims[0].lhs_dilate == 1 && win->dims[1].lhs_dilate == 1) return nullptr;
  const std::vector<int64_t>& dyd = conv.operand(0)->shape().dims;
  const std::vector<int64_t>& out = conv.shape().dims;
  const std::vector<DgradPhase> ys = Phases(dyd[1], win->dims[0].size, out[1], win->dims[0]);
  const std::vector<DgradPhase> xs = Phases(dyd[2], win->dims[1].size, out[2], win->dims[1]);
  HloInstruction *dy = conv.operand(0), *k = conv.operand(1);
  const std::vector<int64_t>& kd = k->shape().dims;
  return InterleavePhases(
      b, {ys.begin(), ys.end()}, {xs.begin(), xs.end()}, out, [&](size_t i, size_t j) {
        HloInstruction* taps =
            b.Slice(k, {ys[i].kernel, xs[j].kernel, {0, kd[2], 1}, {0, kd[3], 1}});
        return PhaseConvolution(b, dy, taps, ys[i], xs[j], out[3]);
      });
}

}  // namespace tpusim::passes
