// Gradient rules of dot (general dimension numbers) and 2-D convolution (NHWC x HWIO).
#include <algorithm>

#include "compiler/model/autodiff.h"
#include "compiler/model/builder_ops.h"

namespace tpusim::model {
namespace {

Op Operand(const Backprop& s, size_t i) { return Op{s.out.builder, s.node.operands.at(i)}; }

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int64_t IndexOf(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) - v.begin();
}

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(batch, d) && !Contains(contracting, d)) out.push_back(d);
  }
  return out;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

// `x`'s dimension i is the target's dimension target_dim[i]; transposes into target order.
Op ToTargetOrder(Op x, const std::vector<int64_t>& target_dim) {
  std::vector<int64_t> perm(target_dim.size());
  bool identity = true;
  for (size_t i = 0; i < target_dim.size(); ++i) {
    perm[static_cast<size_t>(target_dim[i])] = static_cast<int64_t>(i);
    identity = identity && target_dim[i] == static_cast<int64_t>(i);
  }
  return identity ? x : Transpose(x, perm);
}

}  // namespace

// y[batch, lhs_free, rhs_free] = sum_c lhs[.., c] rhs[.., c]. Each operand's gradient is a
// dot of the adjoint with the other operand, transposed into the operand's dimension order.
// bf16 operands: the adjoint is rounded to bf16, accumulated in the result type, converted back.
void BackpropDot(const Backprop& s) {
  const Op g_out = s.adjoint[0];
  if (!g_out.valid()) return;
  const Op lhs = Operand(s, 0), rhs = Operand(s, 1);
  const DotDims& d = s.node.dot;
  const std::vector<int64_t> lhs_free = FreeDims(lhs.rank(), d.lhs_batch, d.lhs_contracting);
  const std::vector<int64_t> rhs_free = FreeDims(rhs.rank(), d.rhs_batch, d.rhs_contracting);
  const int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  const int64_t nlf = static_cast<int64_t>(lhs_free.size());
  const Op g = ConvertTo(g_out, lhs.type());
  const PrimitiveType acc = s.node.shape.type;
  if (s.needs(0)) {
    Op r = DotGeneral(g, rhs,
                      {.lhs_batch = Range(0, nb),
                       .rhs_batch = d.rhs_batch,
                       .lhs_contracting = Range(nb + nlf, g.rank()),
                       .rhs_contracting = rhs_free},
                      acc);
    std::vector<int64_t> target = d.lhs_batch;
    target.insert(target.end(), lhs_free.begin(), lhs_free.end());
    for (int64_t rd = 0; rd < rhs.rank(); ++rd) {  // rhs contracting dims, ascending
      if (Contains(d.rhs_contracting, rd))
        target.push_back(d.lhs_contracting[IndexOf(d.rhs_contracting, rd)]);
    }
    s.accumulate(0, ConvertTo(ToTargetOrder(r, target), lhs.type()));
  }
  if (s.needs(1)) {
    Op r = DotGeneral(lhs, g,
                      {.lhs_batch = d.lhs_batch,
                       .rhs_batch = Range(0, nb),
                       .lhs_contracting = lhs_free,
                       .rhs_contracting = Range(nb, nb + nlf)},
                      acc);
    std::vector<int64_t> target = d.rhs_batch;
    for (int64_t ld = 0; ld < lhs.rank(); ++ld) {  // lhs contracting dims, ascending
      if (Contains(d.lhs_contracting, ld))
        target.push_back(d.rhs_contracting[IndexOf(d.lhs_contracting, ld)]);
    }
    target.insert(target.end(), rhs_free.begin(), rhs_free.end());
    s.accumulate(1, ConvertTo(ToTargetOrder(r, target), rhs.type()));
  }
}

// y = conv(x[N,H,W,C], k[KH,KW,C,F]) with strides s and padding (lo, hi), per dimension:
//   d_x = conv(d_y dilated by s, k reversed spatially with C and F swapped),
//         padding (K-1-lo, I+lo-(O-1)s-1)                     dim_labels=b01f_01oi->b01f
//   d_k = conv over the batch: x's N is the contracted feature, d_y the window dilated by s,
//         padding (lo, hi - (I+lo+hi-K) mod s)                dim_labels=f01b_i01o->01bf
void BackpropConvolution(const Backprop& s) {
  const Op g_out = s.adjoint[0];
  if (!g_out.valid()) return;
  const Node& n = s.node;
  Check(n.dim_labels == "b01f_01io->b01f" && n.window.size() == 2,
        "convolution gradient needs dim_labels=b01f_01io->b01f");
  const Op x = Operand(s, 0), k = Operand(s, 1);
  const Op g = ConvertTo(g_out, x.type());
  const PrimitiveType acc = n.shape.type;
  std::vector<hlo::WindowDim> input_window, kernel_window;
  for (size_t i = 0; i < 2; ++i) {
    const hlo::WindowDim& w = n.window[i];
    Check(w.lhs_dilate == 1 && w.rhs_dilate == 1 && !w.reversal, "dilated convolution gradient");
    const int64_t in = x.dim(int64_t(i) + 1), out = g.dim(int64_t(i) + 1);
    input_window.push_back({.size = w.size,
                            .pad_low = w.size - 1 - w.pad_low,
                            .pad_high = in + w.pad_low - (out - 1) * w.stride - 1,
                            .lhs_dilate = w.stride});
    const int64_t unused = (in + w.pad_low + w.pad_high - w.size) % w.stride;
    kernel_window.push_back({.size = out,
                             .pad_low = w.pad_low,
                             .pad_high = w.pad_high - unused,
                             .rhs_dilate = w.stride});
  }
  if (s.needs(0)) {
    Op dx = ConvGeneral(g, Reverse(k, {0, 1}), input_window, "b01f_01oi->b01f", x.dims(), acc);
    s.accumulate(0, ConvertTo(dx, x.type()));
  }
  if (s.needs(1)) {
    Op dk = ConvGeneral(x, g, kernel_window, "f01b_i01o->01bf", k.dims(), acc);
    s.accumulate(1, ConvertTo(dk, k.type()));
  }
}

}  // namespace tpusim::model
