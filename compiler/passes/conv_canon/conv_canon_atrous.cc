// Dilated (atrous) forward convolutions (NHWC `b01f_01io->b01f` or `b01f_01oi->b01f`, stride
// 1, window dilation d), rewritten by output phase as XLA's space-to-batch conversion does
// (see conv_canon.h). Along one spatial dimension, with input X of n positions, pad_low p and
// a kernel of k taps:
//   Y[y] = sum_t X[y + d t - p] K[t].
// Outputs y = a + d u of phase a read only X[r + d j] with r = (a - p) mod d:
//   Y[a + d u] = sum_t X_r[u + c + t] K[t],  X_r[j] = X[r + d j],  c = floor((a - p) / d),
// an undilated stride-1 convolution of the strided slice X_r with pad_low = -c: the MXUs
// do the convolution's own multiply-adds, none with the window's holes. Every phase computes
// ceil(m / d) outputs, so the phases stack into Y by concatenates and a bitcast; what lies
// past m is sliced off.
#include <algorithm>
#include <vector>

#include "compiler/passes/conv_canon/conv_canon.h"
#include "compiler/passes/conv_canon/conv_canon_phases.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

struct AtrousPhase : ConvPhase {
  hlo::SliceDim input;  // the positions of X its convolution reads
};

// The d phases along one spatial dimension, X of `n` positions, Y of `m`: each computes
// ceil(m / d) outputs, so that they stack (the last ones past m are sliced off). Empty when
// some phase would read no position of X.
std::vector<AtrousPhase> Phases(int64_t n, int64_t m, const hlo::WindowDim& w) {
  const int64_t d = w.rhs_dilate, p = w.pad_low, outputs = CeilDiv(m, d);
  std::vector<AtrousPhase> out;
  for (int64_t a = 0; a < d; ++a) {
    AtrousPhase ph;
    const int64_t r = ((a - p) % d + d) % d, c = FloorDiv(a - p, d);
    if (r >= n) return {};
    const int64_t inputs = CeilDiv(n - r, d);
    ph.outputs = outputs, ph.taps = w.size, ph.input = {r, n, d};
    ph.pad_low = -c;
    ph.pad_high = outputs + w.size - 1 - inputs - ph.pad_low;
    out.push_back(ph);
  }
  return out;
}

}  // namespace

HloInstruction* RewriteDilatedConv(const HloInstruction& conv, ConvRewriteBuilder& b) {
  if (!IsNhwc2d(conv)) return nullptr;
  const hlo::Window* win = conv.window();
  for (const hlo::WindowDim& w : win->dims)
    if (w.stride != 1 || w.lhs_dilate != 1 || w.reversal || w.rhs_dilate < 1) return nullptr;
  if (win->dims[0].rhs_dilate == 1 && win->dims[1].rhs_dilate == 1) return nullptr;
  HloInstruction *x = conv.operand(0), *k = conv.operand(1);
  const std::vector<int64_t>& xd = x->shape().dims;
  const std::vector<int64_t>& out = conv.shape().dims;
  const std::vector<AtrousPhase> ys = Phases(xd[1], out[1], win->dims[0]);
  const std::vector<AtrousPhase> xs = Phases(xd[2], out[2], win->dims[1]);
  if (ys.empty() || xs.empty()) return nullptr;
  const std::vector<int64_t> stacked = {out[0], ys[0].outputs * win->dims[0].rhs_dilate,
                                        xs[0].outputs * win->dims[1].rhs_dilate, out[3]};
  HloInstruction* y = InterleavePhases(
      b, {ys.begin(), ys.end()}, {xs.begin(), xs.end()}, stacked, [&](size_t i, size_t j) {
        HloInstruction* phase =
            b.Slice(x, {{0, xd[0], 1}, ys[i].input, xs[j].input, {0, xd[3], 1}});
        return PhaseConvolution(b, phase, k, ys[i], xs[j], out[3]);
      });
  return y ? b.Slice(y, {{0, out[0], 1}, {0, out[1], 1}, {0, out[2], 1}, {0, out[3], 1}}) : nullptr;
}

}  // namespace tpusim::passes
