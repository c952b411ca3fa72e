#include "compiler/passes/conv_canon/conv_canon_phases.h"

#include <algorithm>

namespace tpusim::passes {

using hlo::HloInstruction;

bool IsNhwc2d(const HloInstruction& conv) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  return cd && (cd->labels == "b01f_01io->b01f" || cd->labels == "b01f_01oi->b01f") && win &&
         win->dims.size() == 2;
}

HloInstruction* PhaseConvolution(ConvRewriteBuilder& b, HloInstruction* lhs, HloInstruction* kernel,
                                 const ConvPhase& py, const ConvPhase& px, int64_t features) {
  const std::vector<int64_t>& d = lhs->shape().dims;
  const std::vector<int64_t> dims = {d[0], py.outputs, px.outputs, features};
  hlo::Window win;
  win.dims.resize(2);
  win.dims[0].size = py.taps, win.dims[1].size = px.taps;
  if (py.pad_low >= 0 && py.pad_high >= 0 && px.pad_low >= 0 && px.pad_high >= 0) {
    win.dims[0].pad_low = py.pad_low, win.dims[0].pad_high = py.pad_high;
    win.dims[1].pad_low = px.pad_low, win.dims[1].pad_high = px.pad_high;
    if (HloInstruction* direct = b.Conv(lhs, kernel, win, dims)) return direct;
    win.dims[0].pad_low = win.dims[0].pad_high = win.dims[1].pad_low = win.dims[1].pad_high = 0;
  }
  auto crop = [](const ConvPhase& p, int64_t size) {
    return hlo::SliceDim{std::max<int64_t>(0, -p.pad_low), size - std::max<int64_t>(0, -p.pad_high),
                         1};
  };
  auto extend = [](const ConvPhase& p) {
    return hlo::PadDim{std::max<int64_t>(0, p.pad_low), std::max<int64_t>(0, p.pad_high), 0};
  };
  const hlo::SliceDim cy = crop(py, d[1]), cx = crop(px, d[2]);
  if (cy.limit <= cy.start || cx.limit <= cx.start) return nullptr;
  HloInstruction* padded = b.Slice(lhs, {{0, d[0], 1}, cy, cx, {0, d[3], 1}});
  padded = b.Pad(padded, {{}, extend(py), extend(px), {}});
  return b.Conv(padded, kernel, win, dims);
}

HloInstruction* InterleavePhases(ConvRewriteBuilder& b, const std::vector<ConvPhase>& ys,
                                 const std::vector<ConvPhase>& xs, const std::vector<int64_t>& out,
                                 const std::function<HloInstruction*(size_t, size_t)>& phase) {
  bool stack = true;
  for (const auto* phases : {&ys, &xs})
    for (const ConvPhase& p : *phases)
      stack = stack && p.taps > 0 && p.outputs == phases->front().outputs;
  std::vector<HloInstruction*> rows;
  HloInstruction* sum = nullptr;
  for (size_t i = 0; i < ys.size(); ++i) {
    std::vector<HloInstruction*> row;
    for (size_t j = 0; j < xs.size(); ++j) {
      const ConvPhase &py = ys[i], &px = xs[j];
      if (py.taps == 0 || px.taps == 0) continue;  // its outputs are zeros
      HloInstruction* result = phase(i, j);
      if (!result) return nullptr;
      if (stack) {
        row.push_back(b.Bitcast(result, {out[0], py.outputs, 1, px.outputs, 1, out[3]}));
      } else {
        HloInstruction* placed = b.Pad(result, {{}, py.place, px.place, {}});
        sum = sum ? b.Add(sum, placed) : placed;
      }
    }
    if (stack) rows.push_back(b.Concatenate(row, 4));
  }
  if (stack) return b.Bitcast(b.Concatenate(rows, 2), out);
  return sum;
}

}  // namespace tpusim::passes
