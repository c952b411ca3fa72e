// Grouped convolutions, rewritten as XLA's convolution group converter does (see
// conv_canon.h). Forward and input-gradient convolutions with G feature groups (NHWC
// `b01f_01io->b01f` or `b01f_01oi->b01f`):
//   groups of several input channels -> one convolution per group on its slice of the input
//     channels and of the kernel's outputs, concatenated along the features (ResNeXt);
//   one input channel per group (depthwise, M outputs each) -> chunks of B channels (the
//     largest divisor of G up to 128, one MXU weight tile deep), each a dense convolution
//     with the chunk's kernel expanded block-diagonally: [kh, kw, B, B M] holding channel
//     c's taps at input c and zeros elsewhere.
// Weight gradients with G batch groups (`f01b_i01o->01bf`, what JAX differentiates a grouped
// convolution's kernel into) likewise: per group, or per depthwise chunk a dense weight
// gradient [kh, kw, B, B M] whose block diagonal is the chunk's gradient.
// Expanding and extracting are data movement (a pad, bitcasts and slices), exact; the MXU
// does B times the depthwise multiply-adds, as on a TPU, whose MXU has no depthwise mode.
#include <algorithm>
#include <vector>

#include "compiler/passes/conv_canon/conv_canon.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;

constexpr int64_t kMxuDepth = 128;  // rows of an MXU weight tile (sim/configs: mxu_rows)

// In row-major [B, B M] (input c, output o = c' M + m) the block diagonal c = c' sits at
// c (B M + M) + m: B runs of M values B M apart.
// K's taps of B depthwise channels ([kh, kw, B, M]) as the dense [kh, kw, B, B M] kernel.
HloInstruction* ExpandDiagonal(ConvRewriteBuilder& b, HloInstruction* taps, int64_t kh, int64_t kw,
                               int64_t chunk, int64_t m) {
  taps = b.Pad(taps, {{}, {}, {}, {0, chunk * m, 0}});
  taps = b.Bitcast(taps, {kh, kw, chunk * (m + chunk * m)});
  taps = b.Slice(taps, {{0, kh, 1}, {0, kw, 1}, {0, chunk * chunk * m, 1}});
  return b.Bitcast(taps, {kh, kw, chunk, chunk * m});
}

// The block diagonal of a dense [kh, kw, B, B M] as [kh, kw, B, M].
HloInstruction* ExtractDiagonal(ConvRewriteBuilder& b, HloInstruction* dense, int64_t kh,
                                int64_t kw, int64_t chunk, int64_t m) {
  HloInstruction* d = b.Bitcast(dense, {kh, kw, chunk * chunk * m});
  d = b.Pad(d, {{}, {}, {0, chunk * m, 0}});
  d = b.Bitcast(d, {kh, kw, chunk, chunk * m + m});
  return b.Slice(d, {{0, kh, 1}, {0, kw, 1}, {0, chunk, 1}, {0, m, 1}});
}

// Channels [lo, hi) of an NHWC value (its last dimension).
HloInstruction* Channels(ConvRewriteBuilder& b, HloInstruction* v, int64_t lo, int64_t hi) {
  const std::vector<int64_t>& d = v->shape().dims;
  return b.Slice(v, {{0, d[0], 1}, {0, d[1], 1}, {0, d[2], 1}, {lo, hi, 1}});
}

// The largest divisor of `groups` up to one MXU tile.
int64_t Chunk(int64_t groups) {
  int64_t chunk = std::min(groups, kMxuDepth);
  while (groups % chunk) --chunk;
  return chunk;
}

// NHWC input, HWIO kernel: what the rewritten forward parts use (a 01oi kernel transposed).
hlo::ConvDims Nhwc01io() {
  hlo::ConvDims d;
  d.labels = "b01f_01io->b01f";
  d.input_batch = 0, d.input_feature = 3, d.input_spatial = {1, 2};
  d.kernel_input_feature = 2, d.kernel_output_feature = 3, d.kernel_spatial = {0, 1};
  d.output_batch = 0, d.output_feature = 3, d.output_spatial = {1, 2};
  return d;
}

// A part's convolution, like `conv` but over `lhs`, `rhs` and `dims` with one group (and the
// `labels` given): on an exact kernel as it is, or through the other rewrites (a padded or
// strided layer's weight gradient); nullptr when neither.
HloInstruction* PartConv(const HloInstruction& conv, ConvRewriteBuilder& b, HloInstruction* lhs,
                         HloInstruction* rhs, std::vector<int64_t> dims,
                         const hlo::ConvDims* labels = nullptr) {
  HloInstruction part(conv.name() + ".group", hlo::Opcode::kConvolution,
                      hlo::Shape::Array(conv.shape().type, std::move(dims)));
  part.mutable_attributes() = conv.attributes();
  auto& attrs = part.mutable_attributes();
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                             [](const hlo::Attribute& a) {
                               return a.key == "feature_group_count" ||
                                      a.key == "batch_group_count";
                             }),
              attrs.end());
  if (labels) part.SetAttr("dim_labels", *labels);
  part.AddOperand(lhs);
  part.AddOperand(rhs);
  ConvRewriteBuilder inner(b.target(), part, b.kernels());
  if (HloInstruction* direct = inner.Conv(lhs, rhs, *conv.window(), part.shape().dims))
    return direct;
  for (auto rewrite : {&RewriteWeightGrad, &RewriteInputGrad, &RewriteDilatedConv})
    if (HloInstruction* v = rewrite(part, inner)) return v;
  return nullptr;
}

HloInstruction* FeatureGroups(const HloInstruction& conv, ConvRewriteBuilder& b, int64_t groups) {
  const bool oi = conv.conv_dims()->labels == "b01f_01oi->b01f";
  HloInstruction *x = conv.operand(0), *k = conv.operand(1);
  const std::vector<int64_t>&xd = x->shape().dims, &kd = k->shape().dims, &out = conv.shape().dims;
  const int64_t in_per = kd[oi ? 3 : 2], kout = kd[oi ? 2 : 3], out_per = kout / groups;
  if (xd[3] != in_per * groups || kout % groups) return nullptr;
  // Parts of `per` input channels and `outs` outputs: single groups, or depthwise chunks.
  const int64_t per = in_per == 1 ? Chunk(groups) : in_per;
  const int64_t outs = in_per == 1 ? per * out_per : out_per, parts = xd[3] / per;
  std::vector<HloInstruction*> results;
  for (int64_t p = 0; p < parts; ++p) {
    HloInstruction* xp = Channels(b, x, p * per, (p + 1) * per);
    const hlo::SliceDim o{p * outs, (p + 1) * outs, 1}, i{0, in_per, 1};
    HloInstruction* kp = b.Slice(k, {{0, kd[0], 1}, {0, kd[1], 1}, oi ? o : i, oi ? i : o});
    if (in_per == 1)  // [kh, kw, B M] in either layout: channel c's taps at c M + m
      kp = ExpandDiagonal(b, b.Bitcast(kp, {kd[0], kd[1], per, out_per}), kd[0], kd[1], per,
                          out_per);
    else if (oi)  // HWOI -> HWIO: the implicit-GEMM kernel takes few channels only as 01io
      kp = b.Transpose(kp, {0, 1, 3, 2});
    const hlo::ConvDims io = Nhwc01io();
    HloInstruction* part = PartConv(conv, b, xp, kp, {out[0], out[1], out[2], outs}, &io);
    if (!part) return nullptr;
    results.push_back(part);
  }
  return b.Concatenate(results, 3);
}

HloInstruction* BatchGroups(const HloInstruction& conv, ConvRewriteBuilder& b, int64_t groups) {
  HloInstruction *x = conv.operand(0), *dy = conv.operand(1);
  const std::vector<int64_t>&xd = x->shape().dims, &dyd = dy->shape().dims,
        &out = conv.shape().dims;
  const int64_t in_per = out[2], out_per = out[3] / groups;
  if (xd[3] != in_per * groups || out[3] % groups || dyd[3] != out[3]) return nullptr;
  const int64_t per = in_per == 1 ? Chunk(groups) : in_per;
  const int64_t outs = in_per == 1 ? per * out_per : out_per, parts = xd[3] / per;
  std::vector<HloInstruction*> results;
  for (int64_t p = 0; p < parts; ++p) {
    HloInstruction* xp = Channels(b, x, p * per, (p + 1) * per);
    HloInstruction* dyp = Channels(b, dy, p * outs, (p + 1) * outs);
    HloInstruction* part = PartConv(conv, b, xp, dyp, {out[0], out[1], per, outs});
    if (!part) return nullptr;
    if (in_per == 1)  // the chunk's gradients: [kh, kw, 1, B M], channel c's at c M + m
      part = b.Bitcast(ExtractDiagonal(b, part, out[0], out[1], per, out_per),
                       {out[0], out[1], 1, outs});
    results.push_back(part);
  }
  return b.Concatenate(results, 3);
}

}  // namespace

HloInstruction* RewriteGroupedConv(const HloInstruction& conv, ConvRewriteBuilder& b) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const hlo::Window* win = conv.window();
  const int64_t features = conv.GetInt("feature_group_count").value_or(1);
  const int64_t batches = conv.GetInt("batch_group_count").value_or(1);
  if (!cd || !win || win->dims.size() != 2 || conv.operand(0)->shape().rank() != 4 ||
      conv.operand(1)->shape().rank() != 4 || (features > 1) == (batches > 1))
    return nullptr;
  if (features > 1 && (cd->labels == "b01f_01io->b01f" || cd->labels == "b01f_01oi->b01f"))
    return FeatureGroups(conv, b, features);
  if (batches > 1 && cd->labels == "f01b_i01o->01bf") return BatchGroups(conv, b, batches);
  return nullptr;
}

}  // namespace tpusim::passes
