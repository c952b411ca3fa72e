// Verifier rules for dot, convolution and batch normalization.
#include <algorithm>

#include "compiler/hlo/verify/verifier_impl.h"

namespace tpusim::hlo::verify {
namespace {

const IntList kEmpty;

const IntList& ListOr(const HloInstruction& i, const char* key) {
  const IntList* l = i.GetIntList(key);
  return l ? *l : kEmpty;
}

Status VerifyDot(const HloInstruction& i) {
  const Shape& l = i.operand(0)->shape();
  const Shape& r = i.operand(1)->shape();
  const IntList& lb = ListOr(i, "lhs_batch_dims");
  const IntList& rb = ListOr(i, "rhs_batch_dims");
  const IntList& lc = ListOr(i, "lhs_contracting_dims");
  const IntList& rc = ListOr(i, "rhs_contracting_dims");
  HLO_RETURN_IF_ERROR(ExpectDims(i, lb, l.rank(), "lhs batch dimension"));
  HLO_RETURN_IF_ERROR(ExpectDims(i, rb, r.rank(), "rhs batch dimension"));
  HLO_RETURN_IF_ERROR(ExpectDims(i, lc, l.rank(), "lhs contracting dimension"));
  HLO_RETURN_IF_ERROR(ExpectDims(i, rc, r.rank(), "rhs contracting dimension"));
  if (lb.size() != rb.size()) return Error(i, "lhs and rhs have different numbers of batch dims");
  if (lc.size() != rc.size()) {
    return Error(i, "lhs and rhs have different numbers of contracting dims");
  }
  for (size_t k = 0; k < lb.size(); ++k) {
    if (l.dims[lb[k]] != r.dims[rb[k]]) {
      return Error(i, "lhs batch dimension " + Str(lb[k]) + " has size " + Str(l.dims[lb[k]]) +
                          " but rhs batch dimension " + Str(rb[k]) + " has size " +
                          Str(r.dims[rb[k]]));
    }
  }
  for (size_t k = 0; k < lc.size(); ++k) {
    if (l.dims[lc[k]] != r.dims[rc[k]]) {
      return Error(i, "lhs contracting dimension " + Str(lc[k]) + " has size " +
                          Str(l.dims[lc[k]]) + " but rhs contracting dimension " + Str(rc[k]) +
                          " has size " + Str(r.dims[rc[k]]));
    }
  }
  auto used = [](const IntList& a, const IntList& b, int64_t d) {
    return std::find(a.begin(), a.end(), d) != a.end() ||
           std::find(b.begin(), b.end(), d) != b.end();
  };
  std::vector<int64_t> dims;
  for (int64_t d : lb) dims.push_back(l.dims[d]);
  for (int64_t d = 0; d < l.rank(); ++d) {
    if (!used(lb, lc, d)) dims.push_back(l.dims[d]);
  }
  for (int64_t d = 0; d < r.rank(); ++d) {
    if (!used(rb, rc, d)) dims.push_back(r.dims[d]);
  }
  if (const WordList* p = i.GetWordList("operand_precision"); p && p->size() != 2) {
    return Error(i, "operand_precision needs two entries");
  }
  return ExpectShape(i, Shape::Array(i.shape().type, dims));
}

Status VerifyConvolution(const HloInstruction& i) {
  const Shape& in = i.operand(0)->shape();
  const Shape& k = i.operand(1)->shape();
  const ConvDims* cd = i.conv_dims();
  if (!cd) return Error(i, "convolution needs dim_labels=...");
  int64_t n = static_cast<int64_t>(cd->input_spatial.size());
  if (in.rank() != n + 2 || k.rank() != n + 2 || i.shape().rank() != n + 2) {
    return Error(i, "dim_labels " + cd->labels + " describe rank " + Str(n + 2) +
                        " but input, kernel and result have ranks " + Str(in.rank()) + ", " +
                        Str(k.rank()) + ", " + Str(i.shape().rank()));
  }
  const Window* w = i.window();
  Window unit;
  unit.dims.resize(n);
  if (!w) w = &unit;
  if (static_cast<int64_t>(w->dims.size()) != n) {
    return Error(i, "window has " + Str(w->dims.size()) + " dimensions but the convolution has " +
                        Str(n) + " spatial dimensions");
  }
  int64_t fgc = i.GetInt("feature_group_count").value_or(1);
  int64_t bgc = i.GetInt("batch_group_count").value_or(1);
  if (fgc <= 0 || bgc <= 0) return Error(i, "group counts must be positive");
  int64_t in_f = in.dims[cd->input_feature], in_b = in.dims[cd->input_batch];
  int64_t k_i = k.dims[cd->kernel_input_feature], k_o = k.dims[cd->kernel_output_feature];
  if (in_f != Wide(k_i) * fgc) {
    return Error(i, "input feature dimension has size " + Str(in_f) +
                        " but kernel input feature size " + Str(k_i) + " x feature_group_count " +
                        Str(fgc) + " is " + Str(static_cast<int64_t>(Wide(k_i) * fgc)));
  }
  if (k_o % fgc != 0 || k_o % bgc != 0 || in_b % bgc != 0) {
    return Error(i, "kernel output features " + Str(k_o) + " / batch " + Str(in_b) +
                        " are not divisible by the group counts");
  }
  std::vector<int64_t> out(n + 2);
  out[cd->output_batch] = in_b / bgc;
  out[cd->output_feature] = k_o;
  for (int64_t s = 0; s < n; ++s) {
    const WindowDim& wd = w->dims[s];
    int64_t ks = k.dims[cd->kernel_spatial[s]];
    if (wd.size != ks) {
      return Error(i, "window size " + Str(wd.size) + " of spatial dimension " + Str(s) +
                          " differs from the kernel's " + Str(ks));
    }
    if (wd.stride <= 0 || wd.lhs_dilate <= 0 || wd.rhs_dilate <= 0 || wd.size <= 0) {
      return Error(i, "window stride, size and dilations must be positive");
    }
    int64_t x = in.dims[cd->input_spatial[s]];
    Wide padded = (x > 0 ? Wide(x - 1) * wd.lhs_dilate + 1 : 0) + wd.pad_low + wd.pad_high;
    Wide win = Wide(wd.size - 1) * wd.rhs_dilate + 1;
    Wide o = padded < win ? 0 : (padded - win) / wd.stride + 1;
    if (o > (Wide(1) << 62)) return Error(i, "window output size overflows");
    out[cd->output_spatial[s]] = static_cast<int64_t>(o);
  }
  return ExpectShape(i, Shape::Array(i.shape().type, out));
}

// Floating-point arrays of the same dimensions. Batch norm may mix float precisions (bf16
// values beside f32 statistics), as XLA's verifier allows after bf16 conversion folding
// (HloVerifier's allow_mixed_precision).
bool SameDimsFloat(const Shape& a, const Shape& b) {
  return a.IsArray() && b.IsArray() && IsFloatingType(a.type) && IsFloatingType(b.type) &&
         a.dims == b.dims;
}

Status VerifyBatchNorm(const HloInstruction& i) {
  const Shape& x = i.operand(0)->shape();
  std::optional<int64_t> fi = i.GetInt("feature_index");
  if (!fi || *fi < 0 || *fi >= x.rank()) {
    return Error(i, "feature_index must name a dimension of " + Str(x));
  }
  if (!i.GetFloat("epsilon")) return Error(i, "missing epsilon=");
  if (!IsFloatingType(x.type)) return Error(i, "operand must be floating point, not " + Str(x));
  Shape feat = Shape::Array(x.type, {x.dims[*fi]});
  size_t first_grad = i.opcode() == Opcode::kBatchNormGrad ? 4 : i.operand_count();
  for (size_t k = 1; k < i.operand_count(); ++k) {
    if (k == first_grad) {
      if (!SameDimsFloat(i.operand(k)->shape(), x))
        return Error(i, "grad_output must match operand");
      continue;
    }
    if (!SameDimsFloat(i.operand(k)->shape(), feat)) {
      return Error(
          i, "operand " + Str(k) + " is " + Str(i.operand(k)->shape()) + ", expected " + Str(feat));
    }
  }
  const Shape want = i.opcode() == Opcode::kBatchNormInference ? x : Shape::Tuple({x, feat, feat});
  const Shape& got = i.shape();
  bool ok = got.IsTuple() == want.IsTuple();
  if (ok && got.IsTuple()) {
    ok = got.tuple_shapes.size() == want.tuple_shapes.size();
    for (size_t k = 0; ok && k < got.tuple_shapes.size(); ++k)
      ok = SameDimsFloat(got.tuple_shapes[k], want.tuple_shapes[k]);
  } else if (ok) {
    ok = SameDimsFloat(got, want);
  }
  if (!ok) return Error(i, "result shape is " + Str(got) + " but should be " + Str(want));
  return Status::Ok();
}

}  // namespace

Status VerifyContraction(const HloModule&, const HloInstruction& i) {
  HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
  switch (i.opcode()) {
    case Opcode::kDot:
      return VerifyDot(i);
    case Opcode::kConvolution:
      return VerifyConvolution(i);
    default:
      return VerifyBatchNorm(i);
  }
}

}  // namespace tpusim::hlo::verify
