// Verifier rules for sources and data movement ops.
#include "compiler/hlo/verify/verifier_impl.h"

namespace tpusim::hlo::verify {
namespace {

Status VerifySlice(const HloInstruction& i, const Shape& a) {
  const SliceBounds* b = i.slice();
  if (!b) return Error(i, "missing slice={[start:limit], ...}");
  if (static_cast<int64_t>(b->size()) != a.rank()) {
    return Error(
        i, "slice has " + Str(b->size()) + " bounds but the operand has rank " + Str(a.rank()));
  }
  std::vector<int64_t> dims;
  for (size_t d = 0; d < b->size(); ++d) {
    const SliceDim& s = (*b)[d];
    if (s.start < 0 || s.start > s.limit || s.limit > a.dims[d] || s.stride <= 0) {
      return Error(i, "slice [" + Str(s.start) + ":" + Str(s.limit) + ":" + Str(s.stride) +
                          "] is invalid for dimension " + Str(d) + " of size " + Str(a.dims[d]));
    }
    dims.push_back((s.limit - s.start + s.stride - 1) / s.stride);
  }
  return ExpectShape(i, Shape::Array(a.type, dims));
}

Status VerifyPad(const HloInstruction& i, const Shape& a) {
  const PaddingConfig* p = i.padding();
  if (!p) return Error(i, "missing padding=low_high_interiorx...");
  if (!i.operand(1)->shape().IsScalar()) return Error(i, "padding value must be a scalar");
  if (static_cast<int64_t>(p->size()) != a.rank()) {
    return Error(i, "padding has " + Str(p->size()) + " dimensions but the operand has rank " +
                        Str(a.rank()));
  }
  std::vector<int64_t> dims;
  for (size_t d = 0; d < p->size(); ++d) {
    const PadDim& pd = (*p)[d];
    Wide n = Wide(a.dims[d]) + pd.low + pd.high +
             (a.dims[d] > 0 ? Wide(a.dims[d] - 1) * pd.interior : 0);
    if (pd.interior < 0 || n < 0 || n > (Wide(1) << 62)) {
      return Error(i, "padding of dimension " + Str(d) + " gives an invalid size");
    }
    dims.push_back(static_cast<int64_t>(n));
  }
  return ExpectShape(i, Shape::Array(a.type, dims));
}

Status VerifyConcatenate(const HloInstruction& i, const Shape& a) {
  const IntList* dims;
  HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &dims));
  if (dims->size() != 1) return Error(i, "concatenate needs exactly one dimension");
  HLO_RETURN_IF_ERROR(ExpectDims(i, *dims, a.rank(), "dimension"));
  int64_t cd = (*dims)[0];
  Shape want = a;
  want.layout.reset();
  for (size_t k = 1; k < i.operand_count(); ++k) {
    const Shape& b = i.operand(k)->shape();
    bool ok = b.type == a.type && b.rank() == a.rank();
    for (int64_t d = 0; ok && d < a.rank(); ++d) ok = d == cd || a.dims[d] == b.dims[d];
    if (!ok) return Error(i, "operand " + Str(k) + " " + Str(b) + " does not match " + Str(a));
    want.dims[cd] += b.dims[cd];
  }
  return ExpectShape(i, want);
}

Status VerifyDynamicSlice(const HloInstruction& i, const Shape& a) {
  bool update = i.opcode() == Opcode::kDynamicUpdateSlice;
  size_t first_index = update ? 2 : 1;
  if (i.operand_count() != first_index + static_cast<size_t>(a.rank())) {
    return Error(i, "needs " + Str(a.rank()) + " scalar start indices, has " +
                        Str(static_cast<int64_t>(i.operand_count()) - int64_t(first_index)));
  }
  for (size_t k = first_index; k < i.operand_count(); ++k) {
    const Shape& s = i.operand(k)->shape();
    if (!s.IsScalar() || !IsIntegralType(s.type)) {
      return Error(i, "start index " + Str(k - first_index) + " must be an integer scalar");
    }
  }
  std::vector<int64_t> sizes;
  if (update) {
    sizes = i.operand(1)->shape().dims;
    if (static_cast<int64_t>(sizes.size()) != a.rank()) return Error(i, "update rank differs");
  } else {
    const IntList* s;
    HLO_RETURN_IF_ERROR(RequireIntList(i, "dynamic_slice_sizes", &s));
    if (static_cast<int64_t>(s->size()) != a.rank()) return Error(i, "slice sizes rank differs");
    sizes = *s;
  }
  for (int64_t d = 0; d < a.rank(); ++d) {
    if (sizes[d] < 0 || sizes[d] > a.dims[d]) {
      return Error(i, "slice size " + Str(sizes[d]) + " exceeds dimension " + Str(d) + " of size " +
                          Str(a.dims[d]));
    }
  }
  return ExpectShape(i, update ? a : Shape::Array(a.type, sizes));
}

}  // namespace

Status VerifyDataMovement(const HloModule& m, const HloInstruction& i) {
  if (i.opcode() == Opcode::kGather || i.opcode() == Opcode::kScatter) {
    return VerifyGatherScatter(m, i);
  }
  if (i.opcode() == Opcode::kSort) return VerifyControl(m, i);
  if (i.opcode() == Opcode::kParameter || i.opcode() == Opcode::kConstant ||
      i.opcode() == Opcode::kRngBitGenerator) {
    return Status::Ok();
  }
  // A sharding annotation (the parser admits no other custom-call): any operands and result;
  // the SPMD partitioner checks them against their shardings.
  if (i.opcode() == Opcode::kCustomCall) return Status::Ok();
  HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
  if (i.shape().IsTuple()) return Error(i, "result must be an array, not " + Str(i.shape()));
  const Shape& r = i.shape();
  if (i.opcode() == Opcode::kReplicaId || i.opcode() == Opcode::kPartitionId) {
    return ExpectShape(i, Shape::Array(PrimitiveType::kU32, {}));
  }
  if (i.opcode() == Opcode::kIota) {
    std::optional<int64_t> d = i.GetInt("iota_dimension");
    if (!d || *d < 0 || *d >= std::max<int64_t>(r.rank(), 1)) {
      return Error(i, "iota needs iota_dimension within the result rank " + Str(r.rank()));
    }
    return Status::Ok();
  }
  if (i.opcode() == Opcode::kRng) {
    for (const HloInstruction* op : i.operands()) {
      if (!op->shape().IsScalar() || op->shape().type != r.type) {
        return Error(i, "rng bounds must be scalars of the result type");
      }
    }
    return Status::Ok();
  }
  if (i.operand_count() == 0) return Error(i, "needs an operand");
  const Shape& a = i.operand(0)->shape();
  switch (i.opcode()) {
    case Opcode::kBroadcast: {
      const IntList* dims;
      HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &dims));
      if (static_cast<int64_t>(dims->size()) != a.rank()) {
        return Error(i, "broadcast dimensions has " + Str(dims->size()) +
                            " entries but the operand has rank " + Str(a.rank()));
      }
      HLO_RETURN_IF_ERROR(ExpectDims(i, *dims, r.rank(), "broadcast dimension"));
      for (size_t k = 0; k < dims->size(); ++k) {
        if (r.dims[(*dims)[k]] != a.dims[k]) {
          return Error(i, "operand dimension " + Str(k) + " of size " + Str(a.dims[k]) +
                              " maps to result dimension " + Str((*dims)[k]) + " of size " +
                              Str(r.dims[(*dims)[k]]));
        }
      }
      if (r.type != a.type) return Error(i, "broadcast cannot change the element type");
      return Status::Ok();
    }
    case Opcode::kReshape:
    case Opcode::kBitcast:
      if (i.opcode() == Opcode::kReshape && r.type != a.type) {
        return Error(i, "reshape cannot change the element type");
      }
      if (Wide(r.ElementCount()) * PrimitiveTypeBits(r.type) !=
          Wide(a.ElementCount()) * PrimitiveTypeBits(a.type)) {
        return Error(i, "result " + Str(r) + " has " + Str(r.ElementCount()) +
                            " elements but the operand " + Str(a) + " has " +
                            Str(a.ElementCount()));
      }
      return Status::Ok();
    case Opcode::kTranspose: {
      const IntList* perm;
      HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &perm));
      if (static_cast<int64_t>(perm->size()) != a.rank()) {
        return Error(i,
                     "permutation has " + Str(perm->size()) + " entries for rank " + Str(a.rank()));
      }
      HLO_RETURN_IF_ERROR(ExpectDims(i, *perm, a.rank(), "permutation entry"));
      std::vector<int64_t> dims;
      for (int64_t p : *perm) dims.push_back(a.dims[p]);
      return ExpectShape(i, Shape::Array(a.type, dims));
    }
    case Opcode::kReverse: {
      const IntList* dims;
      HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &dims));
      HLO_RETURN_IF_ERROR(ExpectDims(i, *dims, a.rank(), "reverse dimension"));
      return ExpectShape(i, a);
    }
    case Opcode::kCopy:
      return ExpectShape(i, a);
    case Opcode::kSlice:
      return VerifySlice(i, a);
    case Opcode::kPad:
      return VerifyPad(i, a);
    case Opcode::kConcatenate:
      return VerifyConcatenate(i, a);
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
      return VerifyDynamicSlice(i, a);
    default:
      return Status::Ok();
  }
}

}  // namespace tpusim::hlo::verify
