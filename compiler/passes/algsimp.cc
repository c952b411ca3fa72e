// Algebraic simplification: the rewrite rules and the sweep driver; see algsimp.h.
#include "compiler/passes/algsimp.h"

#include <cmath>

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;
using hlo::Shape;

bool SameLayout(const Shape& a, const Shape& b) {
  return !a.layout || !b.layout || *a.layout == *b.layout;
}

// `x` may stand in for `instr`: same dimensions, type and (if both have one) layout.
HloInstruction* IfSameShape(HloInstruction* x, const HloInstruction& instr) {
  return x->shape().Compatible(instr.shape()) && SameLayout(x->shape(), instr.shape()) ? x
                                                                                       : nullptr;
}

// The constant behind `i` (itself, or the scalar constant it broadcasts).
const HloInstruction* ConstantOf(const HloInstruction* i, const ModuleEdits& edits) {
  if (i->opcode() == Opcode::kBroadcast) i = edits.Resolve(i->operand(0));
  if (i->opcode() != Opcode::kConstant || i->literal().elided) return nullptr;
  return i;
}

// Every value of the constant behind `i` is `v`; `negative_zero` demands -0.0 for floats.
bool AllEqual(const HloInstruction* i, const ModuleEdits& edits, int64_t v,
              bool negative_zero = false) {
  const HloInstruction* c = ConstantOf(i, edits);
  if (!c) return false;
  const hlo::Literal& lit = c->literal();
  if (lit.ints.empty() && lit.floats.empty()) return false;
  for (int64_t x : lit.ints) {
    if (x != v) return false;
  }
  for (double x : lit.floats) {
    if (x != static_cast<double>(v) || (negative_zero && !std::signbit(x))) return false;
  }
  return true;
}

bool IsIota(const hlo::IntList* dims, int64_t rank) {
  if (!dims || static_cast<int64_t>(dims->size()) != rank) return false;
  for (int64_t k = 0; k < rank; ++k) {
    if ((*dims)[k] != k) return false;
  }
  return true;
}

// Every value of `from` converts to `to` and back unchanged: a real type to a wider real
// type (bf16 and f16 to f32 or f64, f32 to f64), an integer to a wider one that keeps its
// sign or, unsigned, to a wider signed one.
bool ExactWidening(hlo::PrimitiveType from, hlo::PrimitiveType to) {
  using T = hlo::PrimitiveType;
  const int f = hlo::PrimitiveTypeBits(from), t = hlo::PrimitiveTypeBits(to);
  if (from == T::kC64 || to == T::kC64) return false;
  if (hlo::IsFloatingType(from) && hlo::IsFloatingType(to)) return f < t;
  if (!hlo::IsIntegralType(from) || !hlo::IsIntegralType(to)) return false;
  const bool from_signed = from <= T::kS64, to_signed = to <= T::kS64;
  return f < t && (from_signed == to_signed || !from_signed);
}

HloInstruction* SimplifyArithmetic(HloInstruction& i, HloInstruction* a, HloInstruction* b,
                                   const ModuleEdits& edits) {
  bool integral = hlo::IsIntegralType(i.shape().type);
  bool floating = hlo::IsFloatingType(i.shape().type);
  if (i.opcode() == Opcode::kAdd && (integral || floating)) {
    if (AllEqual(b, edits, 0, floating)) return IfSameShape(a, i);
    if (AllEqual(a, edits, 0, floating)) return IfSameShape(b, i);
  }
  if (i.opcode() == Opcode::kMultiply && (integral || floating)) {
    if (AllEqual(b, edits, 1)) return IfSameShape(a, i);
    if (AllEqual(a, edits, 1)) return IfSameShape(b, i);
    if (integral && AllEqual(b, edits, 0)) return IfSameShape(b, i);
    if (integral && AllEqual(a, edits, 0)) return IfSameShape(a, i);
  }
  return nullptr;
}

}  // namespace

HloInstruction* SimplifyInstruction(HloInstruction& i, const ModuleEdits& edits,
                                    const target::TargetDescription* target) {
  if (i.operand_count() == 0) return nullptr;
  HloInstruction* x = edits.Resolve(i.operand(0));
  hlo::HloComputation& c = *i.parent();
  switch (i.opcode()) {
    case Opcode::kOptimizationBarrier:  // orders nothing here: kernels run in program order
      return x;
    case Opcode::kAdd:
    case Opcode::kMultiply:
      return SimplifyArithmetic(i, x, edits.Resolve(i.operand(1)), edits);
    case Opcode::kReshape:
      if (HloInstruction* same = IfSameShape(x, i)) return same;
      if (x->opcode() == Opcode::kReshape) {
        HloInstruction* inner = edits.Resolve(x->operand(0));
        if (HloInstruction* same = IfSameShape(inner, i)) return same;
        return AddNew(c, "reshape", Opcode::kReshape, i.shape(), {inner});
      }
      return nullptr;
    case Opcode::kTranspose: {
      const hlo::IntList* perm = i.dimensions();
      if (!perm) return nullptr;
      if (IsIota(perm, i.shape().rank())) return IfSameShape(x, i);
      const hlo::IntList* inner_perm = x->dimensions();
      if (x->opcode() != Opcode::kTranspose || !inner_perm) return nullptr;
      hlo::IntList composed;  // output dim k is dim inner_perm[perm[k]] of the innermost operand
      for (int64_t d : *perm) composed.push_back((*inner_perm)[d]);
      HloInstruction* inner = edits.Resolve(x->operand(0));
      if (IsIota(&composed, i.shape().rank())) return IfSameShape(inner, i);
      HloInstruction* t = AddNew(c, "transpose", Opcode::kTranspose, i.shape(), {inner});
      t->SetAttr("dimensions", composed);
      return t;
    }
    case Opcode::kBroadcast:
      return IsIota(i.dimensions(), x->shape().rank()) ? IfSameShape(x, i) : nullptr;
    case Opcode::kConvert:
      if (HloInstruction* same = IfSameShape(x, i)) return same;
      // A widening convert narrowed back (XLA's AlgebraicSimplifier drops such a pair): in
      // bf16 models, gradients widened for an f32 op that another pass folded away.
      if (x->opcode() == Opcode::kConvert &&
          ExactWidening(x->operand(0)->shape().type, x->shape().type)) {
        HloInstruction* a = edits.Resolve(x->operand(0));
        const hlo::PrimitiveType t = a->shape().type;
        const bool wide = hlo::PrimitiveTypeBits(t) >= 32;
        const bool read =
            t == hlo::PrimitiveType::kBF16 && target && target->ExactBf16Reads(a->shape());
        if (wide || read) return IfSameShape(a, i);
      }
      return nullptr;
    case Opcode::kSlice: {
      const hlo::SliceBounds* s = i.slice();
      if (!s || static_cast<int64_t>(s->size()) != x->shape().rank()) return nullptr;
      for (size_t d = 0; d < s->size(); ++d) {
        const hlo::SliceDim& sd = (*s)[d];
        if (sd.start != 0 || sd.limit != x->shape().dims[d] || sd.stride != 1) return nullptr;
      }
      return IfSameShape(x, i);
    }
    case Opcode::kGetTupleElement: {
      // An element of a tuple instruction is that operand (XLA's HandleGetTupleElement): the
      // partitioner's expansions build tuples whose parts then fuse with their readers.
      const std::optional<int64_t> k = i.GetInt("index");
      if (x->opcode() != Opcode::kTuple || !k || *k < 0 ||
          *k >= static_cast<int64_t>(x->operand_count()))
        return nullptr;
      return IfSameShape(edits.Resolve(x->operand(static_cast<size_t>(*k))), i);
    }
    case Opcode::kConcatenate:
      return i.operand_count() == 1 ? IfSameShape(x, i) : nullptr;
    case Opcode::kPad: {
      const hlo::PaddingConfig* p = i.padding();
      if (!p) return nullptr;
      for (const hlo::PadDim& d : *p) {
        if (d.low != 0 || d.high != 0 || d.interior != 0) return nullptr;
      }
      return IfSameShape(x, i);
    }
    default:
      return nullptr;
  }
}

hlo::Result<bool> AlgebraicSimplifierPass::Run(hlo::HloModule& module) {
  bool changed = false;
  for (int sweep = 0; sweep < 16; ++sweep) {
    ModuleEdits edits;
    for (const auto& c : module.computations()) {
      // Index loop: rules append new instructions to the computation.
      for (size_t k = 0; k < c->instructions().size(); ++k) {
        HloInstruction& i = *c->instructions()[k];
        if (HloInstruction* r = SimplifyInstruction(i, edits, target_); r && r != &i) {
          edits.replace[&i] = r;
        }
      }
    }
    if (edits.empty()) break;
    hlo::Status s = ApplyEdits(module, edits);
    if (!s.ok()) return s;
    changed = true;
  }
  return changed;
}

}  // namespace tpusim::passes
