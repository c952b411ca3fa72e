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

#include "compiler/passes/conv_canon.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

struct DgradPhase {
  int64_t phase = 0, outputs = 0, taps = 0;
  hlo::SliceDim kernel;               // the phase's taps
  int64_t pad_low = 0, pad_high = 0;  // of dY in the phase's convolution (may be negative)
  hlo::PadDim place;                  // of the phase's result: its places in dX
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

// The phase's convolution: with the padding in its window, else (unequal or too large for
// the kernel) with dY padded and sliced explicitly. nullptr when no exact kernel takes it.
HloInstruction* PhaseConv(const HloInstruction& conv, ConvRewriteBuilder& b, const DgradPhase& py,
                          const DgradPhase& px) {
  HloInstruction *dy = conv.operand(0), *k = conv.operand(1);
  const std::vector<int64_t>& kd = k->shape().dims;
  const std::vector<int64_t>& dyd = dy->shape().dims;
  HloInstruction* sub = b.Slice(k, {py.kernel, px.kernel, {0, kd[2], 1}, {0, kd[3], 1}});
  const std::vector<int64_t> dims = {dyd[0], py.outputs, px.outputs, conv.shape().dims[3]};
  hlo::Window win;
  win.dims.resize(2);
  win.dims[0].size = py.taps, win.dims[1].size = px.taps;
  if (py.pad_low >= 0 && py.pad_high >= 0 && px.pad_low >= 0 && px.pad_high >= 0) {
    win.dims[0].pad_low = py.pad_low, win.dims[0].pad_high = py.pad_high;
    win.dims[1].pad_low = px.pad_low, win.dims[1].pad_high = px.pad_high;
    if (HloInstruction* direct = b.Conv(dy, sub, win, dims)) return direct;
    win.dims[0].pad_low = win.dims[0].pad_high = win.dims[1].pad_low = win.dims[1].pad_high = 0;
  }
  auto crop = [](const DgradPhase& p, int64_t size) {
    return hlo::SliceDim{std::max<int64_t>(0, -p.pad_low), size - std::max<int64_t>(0, -p.pad_high),
                         1};
  };
  auto extend = [](const DgradPhase& p) {
    return hlo::PadDim{std::max<int64_t>(0, p.pad_low), std::max<int64_t>(0, p.pad_high), 0};
  };
  const hlo::SliceDim cy = crop(py, dyd[1]), cx = crop(px, dyd[2]);
  if (cy.limit <= cy.start || cx.limit <= cx.start) return nullptr;
  HloInstruction* padded = b.Slice(dy, {{0, dyd[0], 1}, cy, cx, {0, dyd[3], 1}});
  padded = b.Pad(padded, {{}, extend(py), extend(px), {}});
  return b.Conv(padded, sub, win, dims);
}

}  // namespace

HloInstruction* RewriteInputGrad(const HloInstruction& conv, ConvRewriteBuilder& b) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  if (!cd || (cd->labels != "b01f_01io->b01f" && cd->labels != "b01f_01oi->b01f") || !win ||
      win->dims.size() != 2)
    return nullptr;
  for (const hlo::WindowDim& w : win->dims)
    if (w.stride != 1 || w.rhs_dilate != 1 || w.reversal) return nullptr;
  if (win->dims[0].lhs_dilate == 1 && win->dims[1].lhs_dilate == 1) return nullptr;
  const std::vector<int64_t>& dyd = conv.operand(0)->shape().dims;
  const std::vector<int64_t>& out = conv.shape().dims;
  const std::vector<DgradPhase> ys = Phases(dyd[1], win->dims[0].size, out[1], win->dims[0]);
  const std::vector<DgradPhase> xs = Phases(dyd[2], win->dims[1].size, out[2], win->dims[1]);
  // Every phase has taps and all phases of a dimension the same size: dX is the phases
  // stacked as [batch, y / sy, sy, x / sx, sx, features] (two concatenates, a free
  // bitcast). Else each phase is padded into place and the phases are added.
  bool stack = true;
  for (const auto* phases : {&ys, &xs})
    for (const DgradPhase& p : *phases)
      stack = stack && p.taps > 0 && p.outputs == phases->front().outputs;
  std::vector<HloInstruction*> rows;
  HloInstruction* sum = nullptr;
  for (const DgradPhase& py : ys) {
    std::vector<HloInstruction*> row;
    for (const DgradPhase& px : xs) {
      if (py.taps == 0 || px.taps == 0) continue;  // its outputs are zeros
      HloInstruction* phase = PhaseConv(conv, b, py, px);
      if (!phase) return nullptr;
      if (stack) {
        row.push_back(b.Bitcast(phase, {out[0], py.outputs, 1, px.outputs, 1, out[3]}));
      } else {
        HloInstruction* placed = b.Pad(phase, {{}, py.place, px.place, {}});
        sum = sum ? b.Add(sum, placed) : placed;
      }
    }
    if (stack) rows.push_back(b.Concatenate(row, 4));
  }
  if (stack) return b.Bitcast(b.Concatenate(rows, 2), out);
  return sum;
}

}  // namespace tpusim::passes
