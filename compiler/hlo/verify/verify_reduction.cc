// Verifier rules for reduce, reduce-window, select-and-scatter, gather and scatter.
#include <algorithm>

#include "compiler/hlo/verify/verifier_impl.h"

namespace tpusim::hlo::verify {
namespace {

Shape Scalar(PrimitiveType t) { return Shape::Array(t, {}); }

// A reducer over N values: 2N scalar parameters, returning N scalars (a tuple when N > 1).
Status ExpectReducer(const HloInstruction& i, const HloComputation* c,
                     const std::vector<PrimitiveType>& types) {
  std::vector<Shape> params, outs;
  for (int pass = 0; pass < 2; ++pass) {
    for (PrimitiveType t : types) params.push_back(Scalar(t));
  }
  for (PrimitiveType t : types) outs.push_back(Scalar(t));
  Shape root = outs.size() == 1 ? outs[0] : Shape::Tuple(outs);
  return ExpectSignature(i, c, "to_apply", params, &root);
}

Shape MaybeTuple(const std::vector<Shape>& s) { return s.size() == 1 ? s[0] : Shape::Tuple(s); }

Status VerifyReduce(const HloInstruction& i) {
  size_t n = i.operand_count() / 2;
  if (n == 0 || i.operand_count() % 2) return Error(i, "reduce needs N inputs and N init values");
  const IntList* dims;
  HLO_RETURN_IF_ERROR(RequireIntList(i, "dimensions", &dims));
  const Shape& a = i.operand(0)->shape();
  HLO_RETURN_IF_ERROR(ExpectDims(i, *dims, a.rank(), "reduced dimension"));
  std::vector<PrimitiveType> types;
  std::vector<Shape> results;
  for (size_t k = 0; k < n; ++k) {
    const Shape& in = i.operand(k)->shape();
    if (in.dims != a.dims) return Error(i, "reduce inputs have different dimensions");
    if (!i.operand(n + k)->shape().IsScalar() || i.operand(n + k)->shape().type != in.type) {
      return Error(i, "init value " + Str(k) + " must be a " +
                          std::string(PrimitiveTypeName(in.type)) + " scalar");
    }
    std::vector<int64_t> kept;
    for (int64_t d = 0; d < in.rank(); ++d) {
      if (std::find(dims->begin(), dims->end(), d) == dims->end()) kept.push_back(in.dims[d]);
    }
    types.push_back(in.type);
    results.push_back(Shape::Array(in.type, kept));
  }
  HLO_RETURN_IF_ERROR(ExpectReducer(i, i.to_apply(), types));
  return ExpectShape(i, MaybeTuple(results));
}

// Output dims of a window applied to `in`, or an error.
Status WindowOutput(const HloInstruction& i, const Shape& in, const Window& w,
                    std::vector<int64_t>* out) {
  if (static_cast<int64_t>(w.dims.size()) != in.rank()) {
    return Error(i, "window has " + Str(w.dims.size()) + " dimensions but the operand has rank " +
                        Str(in.rank()));
  }
  for (int64_t d = 0; d < in.rank(); ++d) {
    const WindowDim& wd = w.dims[d];
    if (wd.size <= 0 || wd.stride <= 0 || wd.lhs_dilate <= 0 || wd.rhs_dilate <= 0) {
      return Error(i, "window size, stride and dilations must be positive");
    }
    int64_t x = in.dims[d];
    Wide padded = (x > 0 ? Wide(x - 1) * wd.lhs_dilate + 1 : 0) + wd.pad_low + wd.pad_high;
    Wide win = Wide(wd.size - 1) * wd.rhs_dilate + 1;
    Wide o = padded < win ? 0 : (padded - win) / wd.stride + 1;
    if (o > (Wide(1) << 62)) return Error(i, "window output size overflows");
    out->push_back(static_cast<int64_t>(o));
  }
  return Status::Ok();
}

Status VerifyReduceWindow(const HloInstruction& i) {
  size_t n = i.operand_count() / 2;
  if (n == 0 || i.operand_count() % 2) {
    return Error(i, "reduce-window needs N inputs and N init values");
  }
  const Window* w = i.window();
  if (!w) return Error(i, "missing window={...}");
  std::vector<PrimitiveType> types;
  std::vector<Shape> results;
  for (size_t k = 0; k < n; ++k) {
    const Shape& in = i.operand(k)->shape();
    std::vector<int64_t> dims;
    HLO_RETURN_IF_ERROR(WindowOutput(i, in, *w, &dims));
    types.push_back(in.type);
    results.push_back(Shape::Array(in.type, dims));
  }
  HLO_RETURN_IF_ERROR(ExpectReducer(i, i.to_apply(), types));
  return ExpectShape(i, MaybeTuple(results));
}

Status VerifySelectAndScatter(const HloInstruction& i) {
  const Shape& a = i.operand(0)->shape();
  const Window* w = i.window();
  if (!w) return Error(i, "missing window={...}");
  std::vector<int64_t> dims;
  HLO_RETURN_IF_ERROR(WindowOutput(i, a, *w, &dims));
  if (i.operand(1)->shape().dims != dims) {
    return Error(i, "source " + Str(i.operand(1)->shape()) + " does not match the window output " +
                        Str(Shape::Array(a.type, dims)));
  }
  Shape pred = Scalar(PrimitiveType::kPred), s = Scalar(a.type);
  HLO_RETURN_IF_ERROR(ExpectSignature(i, i.CalledComputation("select"), "select", {s, s}, &pred));
  HLO_RETURN_IF_ERROR(ExpectSignature(i, i.CalledComputation("scatter"), "scatter", {s, s}, &s));
  return ExpectShape(i, a);
}

}  // namespace

Status VerifyGatherScatter(const HloModule&, const HloInstruction& i) {
  HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
  if (i.opcode() == Opcode::kGather) {
    const Shape& a = i.operand(0)->shape();
    const Shape& idx = i.operand(1)->shape();
    const IntList *offset, *collapsed, *sizes;
    HLO_RETURN_IF_ERROR(RequireIntList(i, "offset_dims", &offset));
    HLO_RETURN_IF_ERROR(RequireIntList(i, "collapsed_slice_dims", &collapsed));
    HLO_RETURN_IF_ERROR(RequireIntList(i, "slice_sizes", &sizes));
    const IntList* batching = i.GetIntList("operand_batching_dims");
    size_t nb = batching ? batching->size() : 0;
    if (static_cast<int64_t>(sizes->size()) != a.rank()) {
      return Error(i, "slice_sizes has " + Str(sizes->size()) + " entries for operand rank " +
                          Str(a.rank()));
    }
    if (offset->size() + collapsed->size() + nb != static_cast<size_t>(a.rank())) {
      return Error(i,
                   "offset_dims, collapsed_slice_dims and operand_batching_dims must cover "
                   "the operand's rank " +
                       Str(a.rank()));
    }
    // Every dimension list in range and without repeats (fuzzing found a batching dimension 5
    // of a rank-2 operand read past the partitioner's tile counts).
    IntList dropped = *collapsed;  // collapsed or batching: each operand dimension once
    if (batching) dropped.insert(dropped.end(), batching->begin(), batching->end());
    HLO_RETURN_IF_ERROR(ExpectDims(i, dropped, a.rank(), "collapsed or batching dimension"));
    int64_t ivd = i.GetInt("index_vector_dim").value_or(idx.rank());
    if (ivd < 0 || ivd > idx.rank())
      return Error(i,
                   "index_vector_dim " + Str(ivd) + " is out of range for rank " + Str(idx.rank()));
    if (const IntList* map = i.GetIntList("start_index_map"))
      HLO_RETURN_IF_ERROR(ExpectDims(i, *map, a.rank(), "start_index_map dimension"));
    if (const IntList* b = i.GetIntList("start_indices_batching_dims")) {
      HLO_RETURN_IF_ERROR(ExpectDims(i, *b, idx.rank(), "start indices batching dimension"));
      if (std::count(b->begin(), b->end(), ivd))
        return Error(i, "index_vector_dim " + Str(ivd) + " is also a batching dimension");
    }
    int64_t batch_rank = ivd < idx.rank() ? idx.rank() - 1 : idx.rank();
    if (i.shape().rank() != batch_rank + static_cast<int64_t>(offset->size())) {
      return Error(i, "result rank " + Str(i.shape().rank()) + " should be " +
                          Str(batch_rank + static_cast<int64_t>(offset->size())));
    }
    HLO_RETURN_IF_ERROR(ExpectDims(i, *offset, i.shape().rank(), "offset dimension"));
    // Each offset dimension of the result is the slice size of the next operand dimension
    // that is neither collapsed nor a batching dimension (XLA's shape inference).
    size_t k = 0;
    for (int64_t d = 0; d < a.rank(); ++d) {
      const auto in = [d](const IntList* l) { return l && std::count(l->begin(), l->end(), d); };
      if ((*sizes)[d] < 0 || (*sizes)[d] > a.dims[d])
        return Error(i, "slice_sizes[" + Str(d) + "] = " + Str((*sizes)[d]) +
                            " exceeds the operand's dimension " + Str(a.dims[d]));
      if (in(collapsed) || in(batching) || k >= offset->size()) continue;
      const int64_t got = i.shape().dims[(*offset)[k++]];
      if (got != (*sizes)[d])
        return Error(i, "result dimension " + Str((*offset)[k - 1]) + " is " + Str(got) +
                            " but slice_sizes[" + Str(d) + "] is " + Str((*sizes)[d]));
    }
    return Status::Ok();
  }
  size_t n = (i.operand_count() - 1) / 2;
  if (n == 0 || i.operand_count() % 2 == 0) {
    return Error(i, "scatter needs N inputs, indices and N updates");
  }
  const Shape& a = i.operand(0)->shape();
  const IntList *window, *inserted;
  HLO_RETURN_IF_ERROR(RequireIntList(i, "update_window_dims", &window));
  HLO_RETURN_IF_ERROR(RequireIntList(i, "inserted_window_dims", &inserted));
  const IntList* batching = i.GetIntList("input_batching_dims");
  size_t nb = batching ? batching->size() : 0;
  if (window->size() + inserted->size() + nb != static_cast<size_t>(a.rank())) {
    return Error(i,
                 "update_window_dims, inserted_window_dims and input_batching_dims must "
                 "cover the operand's rank " +
                     Str(a.rank()));
  }
  IntList dropped = *inserted;  // inserted or batching: each operand dimension once
  if (batching) dropped.insert(dropped.end(), batching->begin(), batching->end());
  HLO_RETURN_IF_ERROR(ExpectDims(i, dropped, a.rank(), "inserted or batching dimension"));
  const Shape& sidx = i.operand(n)->shape();
  if (const IntList* map = i.GetIntList("scatter_dims_to_operand_dims"))
    HLO_RETURN_IF_ERROR(ExpectDims(i, *map, a.rank(), "scatter_dims_to_operand_dims dimension"));
  if (const IntList* b = i.GetIntList("scatter_indices_batching_dims"))
    HLO_RETURN_IF_ERROR(ExpectDims(i, *b, sidx.rank(), "scatter indices batching dimension"));
  HLO_RETURN_IF_ERROR(
      ExpectDims(i, *window, i.operand(n + 1)->shape().rank(), "update window dimension"));
  std::vector<Shape> results;
  std::vector<PrimitiveType> types;
  for (size_t k = 0; k < n; ++k) {
    results.push_back(i.operand(k)->shape());
    types.push_back(i.operand(k)->shape().type);
  }
  HLO_RETURN_IF_ERROR(ExpectReducer(i, i.to_apply(), types));
  return ExpectShape(i, MaybeTuple(results));
}

Status VerifyReduction(const HloModule&, const HloInstruction& i) {
  HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
  switch (i.opcode()) {
    case Opcode::kReduce:
      return VerifyReduce(i);
    case Opcode::kReduceWindow:
      return VerifyReduceWindow(i);
    default:
      return VerifySelectAndScatter(i);
  }
}

}  // namespace tpusim::hlo::verify
