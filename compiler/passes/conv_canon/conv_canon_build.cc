#include "compiler/passes/conv_canon/conv_canon_build.h"

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {

using hlo::HloInstruction;
using hlo::Opcode;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

HloInstruction* ConvRewriteBuilder::New(std::string_view suffix, Opcode opcode,
                                        hlo::PrimitiveType type, std::vector<int64_t> dims,
                                        const std::vector<HloInstruction*>& operands) {
  hlo::Shape shape = hlo::Shape::Array(type, std::move(dims));
  return AddNew(target_, conv_.name() + "." + std::string(suffix), opcode, std::move(shape),
                operands);
}

HloInstruction* ConvRewriteBuilder::Zero(hlo::PrimitiveType type) {
  HloInstruction*& zero = zeros_[type];
  if (!zero) {
    zero = New("zero", Opcode::kConstant, type, {}, {});
    zero->mutable_literal().floats = {0.0};
  }
  return zero;
}

HloInstruction* ConvRewriteBuilder::Slice(HloInstruction* x,
                                          const std::vector<hlo::SliceDim>& dims) {
  std::vector<int64_t> out;
  bool identity = true;
  for (size_t d = 0; d < dims.size(); ++d) {
    const hlo::SliceDim& s = dims[d];
    out.push_back(CeilDiv(s.limit - s.start, s.stride));
    identity = identity && s.start == 0 && s.limit == x->shape().dims[d] && s.stride == 1;
  }
  if (identity) return x;
  HloInstruction* slice = New("slice", Opcode::kSlice, x->shape().type, out, {x});
  slice->SetAttr("slice", hlo::SliceBounds(dims));
  return slice;
}

HloInstruction* ConvRewriteBuilder::Pad(HloInstruction* x, const std::vector<hlo::PadDim>& dims) {
  std::vector<int64_t> out;
  bool identity = true;
  for (size_t d = 0; d < dims.size(); ++d) {
    const hlo::PadDim& p = dims[d];
    const int64_t n = x->shape().dims[d];
    out.push_back(p.low + p.high + n + (n > 0 ? (n - 1) * p.interior : 0));
    identity = identity && p.low == 0 && p.high == 0 && (p.interior == 0 || n <= 1);
  }
  if (identity) return x;
  HloInstruction* pad = New("pad", Opcode::kPad, x->shape().type, out, {x, Zero(x->shape().type)});
  pad->SetAttr("padding", hlo::PaddingConfig(dims));
  return pad;
}

HloInstruction* ConvRewriteBuilder::Add(HloInstruction* a, HloInstruction* b) {
  return New("add", Opcode::kAdd, a->shape().type, a->shape().dims, {a, b});
}

HloInstruction* ConvRewriteBuilder::Bitcast(HloInstruction* x, std::vector<int64_t> dims) {
  return New("bitcast", Opcode::kBitcast, x->shape().type, std::move(dims), {x});
}

HloInstruction* ConvRewriteBuilder::Concatenate(const std::vector<HloInstruction*>& parts,
                                                int64_t dim) {
  if (parts.size() == 1) return parts[0];
  std::vector<int64_t> out = parts[0]->shape().dims;
  for (size_t k = 1; k < parts.size(); ++k) out[dim] += parts[k]->shape().dims[dim];
  HloInstruction* concat =
      New("concatenate", Opcode::kConcatenate, parts[0]->shape().type, out, parts);
  concat->SetAttr("dimensions", hlo::IntList{dim});
  return concat;
}

HloInstruction* ConvRewriteBuilder::Convert(HloInstruction* x, hlo::PrimitiveType type) {
  if (x->shape().type == type) return x;
  return New("convert", Opcode::kConvert, type, x->shape().dims, {x});
}

HloInstruction* ConvRewriteBuilder::Transpose(HloInstruction* x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t d : perm) out.push_back(x->shape().dims[static_cast<size_t>(d)]);
  HloInstruction* t = New("transpose", Opcode::kTranspose, x->shape().type, out, {x});
  t->SetAttr("dimensions", hlo::IntList(perm.begin(), perm.end()));
  return t;
}

hlo::PrimitiveType ConvRewriteBuilder::Accumulation() const {
  const hlo::ConvDims* cd = conv_.conv_dims();
  const bool weight_grad = cd && cd->labels == "f01b_i01o->01bf";
  if (weight_grad && conv_.shape().type == hlo::PrimitiveType::kBF16)
    return hlo::PrimitiveType::kF32;
  return conv_.shape().type;
}

HloInstruction* ConvRewriteBuilder::Finish(HloInstruction* value) {
  return value ? Convert(value, conv_.shape().type) : nullptr;
}

HloInstruction* ConvRewriteBuilder::Conv(HloInstruction* lhs, HloInstruction* rhs,
                                         const hlo::Window& window, std::vector<int64_t> dims,
                                         std::string_view suffix) {
  std::unique_ptr<HloInstruction> conv = CloneWithOperands(
      conv_, UniqueName(target_, conv_.name() + "." + std::string(suffix)), {lhs, rhs});
  conv->mutable_shape() = hlo::Shape::Array(Accumulation(), std::move(dims));
  conv->SetAttr("window", window);
  if (!kernels_.ExactConvolution(*conv)) return nullptr;
  return target_.AddInstruction(std::move(conv));
}

}  // namespace tpusim::passes
