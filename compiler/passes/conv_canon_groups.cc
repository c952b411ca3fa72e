// Grouped forward convolutions (NHWC `b01f_01io->b01f`, feature_group_count G), rewritten as
// XLA's convolution group converter does (see conv_canon.h):
//   groups of several input channels -> one convolution per group on its slice of the input
//     channels and of the kernel's outputs, concatenated along the features (ResNeXt);
//   one input channel per group (depthwise, M outputs each) -> chunks of B channels (the
//     largest divisor of G up to 128, one MXU weight tile deep), each one dense convolution
//     with the chunk's kernel expanded block-diagonally: [kh, kw, B, B M] holding K's taps of
//     channel c at input c and zeros elsewhere (a pad and slices: data movement, exact).
// Expansion costs B times the depthwise multiply-adds on the MXU, as on a TPU, whose MXU
// has no depthwise mode; the values are exact (the zeros add nothing).
#include <algorithm>
#include <vector>

#include "compiler/passes/conv_canon.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

constexpr int64_t kMxuDepth = 128;  // rows of an MXU weight tile (sim/configs: mxu_rows)

// K's taps of B depthwise channels ([kh, kw, 1, B M], output c M + m) as the dense kernel
// [kh, kw, B, B M] that is zero off the channel's own input: in row-major order channel c's
// M values sit at c (B M + M) + m, so the values padded with B M zeros each, then cut to
// B B M, are that kernel.
HloInstruction* ExpandDepthwise(ConvRewriteBuilder& b, HloInstruction* k, int64_t kh, int64_t kw,
                                int64_t chunk, int64_t m) {
  HloInstruction* taps = b.Bitcast(k, {kh, kw, chunk, m});
  taps = b.Pad(taps, {{}, {}, {}, {0, chunk * m, 0}});
  taps = b.Bitcast(taps, {kh, kw, chunk * (m + chunk * m)});
  taps = b.Slice(taps, {{0, kh, 1}, {0, kw, 1}, {0, chunk * chunk * m, 1}});
  return b.Bitcast(taps, {kh, kw, chunk, chunk * m});
}

}  // namespace

HloInstruction* RewriteGroupedConv(const HloInstruction& conv, ConvRewriteBuilder& b) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  const int64_t groups = conv.GetInt("feature_group_count").value_or(1);
  if (!cd || cd->labels != "b01f_01io->b01f" || !win || groups <= 1 ||
      conv.GetInt("batch_group_count").value_or(1) != 1)
    return nullptr;
  HloInstruction *x = conv.operand(0), *k = conv.operand(1);
  const std::vector<int64_t>& xd = x->shape().dims;
  const std::vector<int64_t>& kd = k->shape().dims;
  const std::vector<int64_t>& out = conv.shape().dims;
  if (xd.size() != 4 || kd.size() != 4 || xd[3] % groups || kd[3] % groups) return nullptr;
  const int64_t in_per = kd[2], out_per = kd[3] / groups;
  // Parts of `per` input channels each, `outs` outputs: depthwise chunks or single groups.
  int64_t per = in_per, outs = out_per, parts = groups;
  if (in_per == 1) {
    int64_t chunk = std::min(groups, kMxuDepth);
    while (groups % chunk) --chunk;
    per = chunk, outs = chunk * out_per, parts = groups / chunk;
  }
  std::vector<HloInstruction*> results;
  for (int64_t p = 0; p < parts; ++p) {
    HloInstruction* xp = b.Slice(x, {{0, xd[0], 1}, {0, xd[1], 1}, {0, xd[2], 1},
                                     {p * per, (p + 1) * per, 1}});
    HloInstruction* kp =
        b.Slice(k, {{0, kd[0], 1}, {0, kd[1], 1}, {0, in_per, 1}, {p * outs, (p + 1) * outs, 1}});
    if (in_per == 1) kp = ExpandDepthwise(b, kp, kd[0], kd[1], per, out_per);
    HloInstruction* part = b.Conv(xp, kp, *win, {out[0], out[1], out[2], outs});
    if (!part) return nullptr;
    results.push_back(part);
  }
  return b.Concatenate(results, 3);
}

}  // namespace tpusim::passes
