// Ops that move data within each row of the tiled dimension: each device applies them to its
// tile when they leave that dimension whole (a slice taking all of it, a pad adding nothing
// to it, a concatenate or sort along another dimension, a reverse of others, a dynamic slice
// or update spanning it), and window ops whose window along it is one element.
#include <algorithm>

#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;
using hlo::Result;
using hlo::Shape;

Rule Partitioner::LayoutRule(const HloInstruction& i) {
  const Local& x = Of(i.operand(0));
  const int64_t d = OneTiledDim(x.sharding);
  const Shape& in = i.operand(0)->shape();
  if (d < 0 || !in.IsArray()) return NoRule();
  const HloSharding s = Tiled1D(in.dims.size(), static_cast<size_t>(d));
  std::vector<HloInstruction*> operands = {x.value};
  const int64_t whole = in.dims[d];
  switch (i.opcode()) {
    case Opcode::kSlice: {
      const hlo::SliceBounds* b = i.slice();
      if (!b || b->at(d).start != 0 || b->at(d).limit != whole || b->at(d).stride != 1) {
        return NoRule();
      }
      break;
    }
    case Opcode::kPad: {
      const hlo::PaddingConfig* p = i.padding();
      if (!p || !(p->at(d) == hlo::PadDim{}) || !Of(i.operand(1)).replicated()) return NoRule();
      operands.push_back(Of(i.operand(1)).value);
      break;
    }
    case Opcode::kReverse:
      if (Contains(i.dimensions(), d)) return NoRule();
      break;
    case Opcode::kConcatenate:
    case Opcode::kSort: {
      const hlo::IntList* dims = i.dimensions();
      if (!dims || dims->size() != 1 || (*dims)[0] == d) return NoRule();
      for (size_t k = 1; k < i.operand_count(); ++k) {
        Result<HloInstruction*> r = Reshard(Of(i.operand(k)), i.operand(k)->shape(), s);
        if (!r.ok()) return r.status();
        operands.push_back(r.value());
      }
      break;
    }
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice: {  // the start along d clamps to 0 on every device
      size_t first_index = 1;
      if (i.opcode() == Opcode::kDynamicSlice) {
        const hlo::IntList* sizes = i.GetIntList("dynamic_slice_sizes");
        if (!sizes || sizes->size() != in.dims.size() || (*sizes)[d] != whole) return NoRule();
      } else {
        const Shape& update = i.operand(1)->shape();
        if (!update.IsArray() || update.dims.size() != in.dims.size() || update.dims[d] != whole) {
          return NoRule();
        }
        Result<HloInstruction*> r = Reshard(Of(i.operand(1)), update, s);
        if (!r.ok()) return r.status();
        operands.push_back(r.value());
        first_index = 2;
      }
      for (size_t k = first_index; k < i.operand_count(); ++k) {
        if (!Of(i.operand(k)).replicated()) return NoRule();
        operands.push_back(Of(i.operand(k)).value);
      }
      break;
    }
    default:
      return NoRule();
  }
  HloSharding out = s;
  if (i.shape().IsTuple()) {  // a sort of several operands: each laid out alike
    out = HloSharding{};
    out.kind = HloSharding::Kind::kTuple;
    out.elements.assign(i.shape().tuple_shapes.size(), s);
  }
  Result<Shape> local = LocalShape(i.shape(), out);
  if (!local.ok()) return NoRule();
  HloInstruction* c = Clone(i, local.value(), operands);
  if (i.opcode() == Opcode::kSlice) {
    hlo::SliceBounds b = *i.slice();
    b[d].limit = whole / n_;
    c->SetAttr("slice", b);
  }
  if (i.opcode() == Opcode::kDynamicSlice) {
    hlo::IntList sizes = *i.GetIntList("dynamic_slice_sizes");
    sizes[d] = whole / n_;
    c->SetAttr("dynamic_slice_sizes", sizes);
  }
  return std::optional<Local>(Local{c, out});
}

// reduce-window (one input) and select-and-scatter with a window of one element, stride one
// and no padding or dilation along the tiled dimension.
Rule Partitioner::WindowRule(const HloInstruction& i) {
  const Local& x = Of(i.operand(0));
  const int64_t d = OneTiledDim(x.sharding);
  const hlo::Window* w = i.window();
  if (d < 0 || !w || static_cast<size_t>(d) >= w->dims.size() ||
      !(w->dims[d] == hlo::WindowDim{})) {
    return NoRule();
  }
  const HloSharding s = Tiled1D(i.shape().dims.size(), static_cast<size_t>(d));
  std::vector<HloInstruction*> operands = {x.value};
  if (i.opcode() == Opcode::kReduceWindow) {
    if (i.operand_count() != 2 || !Of(i.operand(1)).replicated()) return NoRule();
    operands.push_back(Of(i.operand(1)).value);
  } else {  // select-and-scatter(operand, source, init)
    if (!Of(i.operand(2)).replicated()) return NoRule();
    Result<HloInstruction*> src = Reshard(Of(i.operand(1)), i.operand(1)->shape(), s);
    if (!src.ok()) return src.status();
    operands.push_back(src.value());
    operands.push_back(Of(i.operand(2)).value);
  }
  Result<Shape> local = LocalShape(i.shape(), s);
  if (!local.ok()) return NoRule();
  return std::optional<Local>(Local{Clone(i, local.value(), operands), s});
}

}  // namespace tpusim::spmd
