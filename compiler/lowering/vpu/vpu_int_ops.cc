// Integer and predicate elementwise ops from the VPU's 32-bit instructions.
#include "compiler/lowering/vpu/vpu_math.h"

#include <cstdint>

namespace tpusim::lowering {
namespace {

using hlo::Opcode;
using hlo::PrimitiveType;

// Ops whose result bits do not depend on signedness.
bool BitwiseOrWrapping(Opcode op) {
  return op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor || op == Opcode::kNot ||
         op == Opcode::kNegate || op == Opcode::kMultiply || op == Opcode::kShiftLeft ||
         op == Opcode::kShiftRightLogical || op == Opcode::kShiftRightArithmetic;
}

bool SignedOnly(Opcode op) {
  return op == Opcode::kMaximum || op == Opcode::kMinimum || op == Opcode::kAbs ||
         op == Opcode::kSign || op == Opcode::kClamp || op == Opcode::kDivide ||
         op == Opcode::kRemainder;
}

}  // namespace

// The magnitudes n, d (up to 2^31, as u32)
// divide in f32, q = trunc(n / d) within a few units; one more f32 division of the residual
// n - q d (wrapping u32 arithmetic, exact) brings it within one; a compare each way finishes.
// The sequence matched C's / and % on 3.4e8 pairs on the host (edges and powers of two
// included) before it was lowered; ExactElementwise.S32DivideAndRemainder runs 65,536.
int DivideOrRemainderS32(VpuEmitter& e, int a, int b, bool remainder) {
  const int zero = e.S32(0), one = e.S32(1);
  auto magnitude = [&](int x, int& negative) {
    negative = e.Emit("vcmp.lt.s32", {x, zero});
    const int m = e.Emit("vsub.s32", {zero, x});
    e.EmitTo(m, "vsel", {negative, m, x});
    return m;
  };
  int na, nb;
  const int n = magnitude(a, na), d = magnitude(b, nb);
  // The f32 of a magnitude: the s32 convert reads 2^31 as -2^31, hence the |.|.
  const int fd = e.Emit("vcvt.f32.s32", {d});
  e.EmitTo(fd, "vabs", {fd});
  const int q = e.Emit("vcvt.f32.s32", {n});
  e.EmitTo(q, "vabs", {q});
  e.EmitTo(q, "vdiv", {q, fd});
  e.EmitTo(q, "vcvt.s32.f32", {q});  // toward zero, saturating; d = 0 is replaced below
  const int r = e.Emit("vmul.u32", {q, d});
  e.EmitTo(r, "vsub.s32", {n, r});
  const int t = e.Emit("vcvt.f32.s32", {r});  // the residual, signed
  e.EmitTo(t, "vdiv", {t, fd});
  e.EmitTo(t, "vcvt.s32.f32", {t});
  e.EmitTo(q, "vadd.s32", {q, t});
  e.EmitTo(t, "vmul.u32", {t, d});
  e.EmitTo(r, "vsub.s32", {r, t});
  // Now r is in (-d, 2d): one d up when negative, one down when r >= d (unsigned: both
  // with the sign bit flipped, compared as s32).
  const int scratch = fd;
  e.EmitTo(t, "vcmp.lt.s32", {r, zero});
  e.EmitTo(scratch, "vsub.s32", {q, one});
  e.EmitTo(q, "vsel", {t, scratch, q});
  e.EmitTo(scratch, "vadd.s32", {r, d});
  e.EmitTo(r, "vsel", {t, scratch, r});
  const int sign_bit = e.S32(INT32_MIN);
  e.EmitTo(t, "vxor.u32", {r, sign_bit});
  e.EmitTo(scratch, "vxor.u32", {d, sign_bit});
  e.EmitTo(t, "vcmp.le.s32", {scratch, t});
  e.EmitTo(scratch, "vadd.s32", {q, one});
  e.EmitTo(q, "vsel", {t, scratch, q});
  e.EmitTo(scratch, "vsub.s32", {r, d});
  e.EmitTo(r, "vsel", {t, scratch, r});
  // The signs: the quotient's negative when exactly one operand is, the remainder's with a.
  const int result = remainder ? r : q;
  if (!remainder) e.EmitTo(na, "vcmp.ne", {na, nb});
  e.EmitTo(scratch, "vsub.s32", {zero, result});
  e.EmitTo(result, "vsel", {na, scratch, result});
  e.EmitTo(t, "vcmp.eq.s32", {b, zero});
  const int by_zero = remainder ? a : e.S32(-1);
  e.EmitTo(result, "vsel", {t, by_zero, result});
  for (int reg : {zero, one, na, nb, n, d, fd, remainder ? q : r, t, sign_bit}) e.Release(reg);
  if (!remainder) e.Release(by_zero);
  return result;
}

namespace {

// Pred elements are 1.0 or 0.0 (as compares leave them): logic is min, max and compares.
int PredicateOp(VpuEmitter& e, Opcode op, const std::vector<int>& srcs) {
  switch (op) {
    case Opcode::kAnd:
      return e.Emit("vmin", {srcs[0], srcs[1]});
    case Opcode::kOr:
      return e.Emit("vmax", {srcs[0], srcs[1]});
    case Opcode::kXor:
      return e.Emit("vcmp.ne", {srcs[0], srcs[1]});
    default: {                    // not
      const int zero = e.S32(0);  // the bits of +0.0
      const int r = e.Emit("vcmp.eq", {srcs[0], zero});
      e.Release(zero);
      return r;
    }
  }
}

}  // namespace

bool HasIntegerForm(Opcode op, PrimitiveType type) {
  if (type == PrimitiveType::kPred)
    return op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor || op == Opcode::kNot;
  if (type == PrimitiveType::kU32)
    return BitwiseOrWrapping(op) || op == Opcode::kMaximum || op == Opcode::kMinimum ||
           op == Opcode::kClamp || op == Opcode::kDivide || op == Opcode::kRemainder ||
           op == Opcode::kPower || op == Opcode::kAbs || op == Opcode::kSign;
  return type == PrimitiveType::kS32 &&
         (BitwiseOrWrapping(op) || SignedOnly(op) || op == Opcode::kPower);
}

int IntegerOp(VpuEmitter& e, Opcode op, PrimitiveType type, const std::vector<int>& srcs) {
  if (type == PrimitiveType::kPred) return PredicateOp(e, op, srcs);
  if (type == PrimitiveType::kU32 &&
      (op == Opcode::kMaximum || op == Opcode::kMinimum || op == Opcode::kClamp)) {
    // Unsigned order is signed order of x ^ 0x80000000: bias, the s32 op, unbias.
    const int bias = e.S32(INT32_MIN);
    std::vector<int> biased;
    for (int s : srcs) biased.push_back(e.Emit("vxor.u32", {s, bias}));
    const int r = IntegerOp(e, op, PrimitiveType::kS32, biased);
    e.EmitTo(r, "vxor.u32", {r, bias});
    for (int b : biased)
      if (b != r) e.Release(b);
    e.Release(bias);
    return r;
  }
  if (op == Opcode::kPower) return IntegerPower(e, srcs[0], srcs[1], type == PrimitiveType::kS32);
  if (type == PrimitiveType::kU32 && op == Opcode::kAbs)
    return e.Emit("vor.u32", {srcs[0], srcs[0]});
  if (type == PrimitiveType::kU32 && op == Opcode::kSign) {  // 1 for any nonzero x
    const int zero = e.S32(0), one = e.S32(1);
    const int r = e.Emit("vcmp.eq.s32", {srcs[0], zero});
    e.EmitTo(r, "vsel", {r, zero, one});
    e.Release(zero);
    e.Release(one);
    return r;
  }
  if (type == PrimitiveType::kU32 && (op == Opcode::kDivide || op == Opcode::kRemainder))
    return DivideOrRemainderU32(e, srcs[0], srcs[1], op == Opcode::kRemainder);
  switch (op) {
    case Opcode::kAnd:
      return e.Emit("vand.u32", {srcs[0], srcs[1]});
    case Opcode::kOr:
      return e.Emit("vor.u32", {srcs[0], srcs[1]});
    case Opcode::kXor:
      return e.Emit("vxor.u32", {srcs[0], srcs[1]});
    case Opcode::kShiftLeft:
      return e.Emit("vshl.u32", {srcs[0], srcs[1]});
    case Opcode::kShiftRightLogical:
      return e.Emit("vshrl.u32", {srcs[0], srcs[1]});
    case Opcode::kShiftRightArithmetic:
      return e.Emit("vshra.s32", {srcs[0], srcs[1]});
    case Opcode::kMultiply:  // the low 32 bits are the same signed or unsigned
      return e.Emit("vmul.u32", {srcs[0], srcs[1]});
    case Opcode::kMaximum:
      return e.Emit("vmax.s32", {srcs[0], srcs[1]});
    case Opcode::kMinimum:
      return e.Emit("vmin.s32", {srcs[0], srcs[1]});
    case Opcode::kDivide:
    case Opcode::kRemainder:
      return DivideOrRemainderS32(e, srcs[0], srcs[1], op == Opcode::kRemainder);
    case Opcode::kClamp: {  // clamp(lo, x, hi)
      const int r = e.Emit("vmax.s32", {srcs[1], srcs[0]});
      e.EmitTo(r, "vmin.s32", {r, srcs[2]});
      return r;
    }
    default:
      break;
  }
  const int zero = e.S32(0);
  int r = -1;
  if (op == Opcode::kNot) {
    const int ones = e.S32(-1);
    r = e.Emit("vxor.u32", {srcs[0], ones});
    e.Release(ones);
  } else if (op == Opcode::kNegate) {  // 0 - x wraps: -INT32_MIN = INT32_MIN
    r = e.Emit("vsub.s32", {zero, srcs[0]});
  } else if (op == Opcode::kAbs) {
    const int negative = e.Emit("vcmp.lt.s32", {srcs[0], zero});
    r = e.Emit("vsub.s32", {zero, srcs[0]});
    e.EmitTo(r, "vsel", {negative, r, srcs[0]});
    e.Release(negative);
  } else {  // sign: x clamped to [-1, 1]
    const int minus_one = e.S32(-1), one = e.S32(1);
    r = e.Emit("vmax.s32", {srcs[0], minus_one});
    e.EmitTo(r, "vmin.s32", {r, one});
    e.Release(minus_one);
    e.Release(one);
  }
  e.Release(zero);
  return r;
}

int CompareU32(VpuEmitter& e, const std::string& direction, int a, int b) {
  if (direction == "EQ" || direction == "NE") return CompareS32(e, direction, a, b);
  const int bias = e.S32(INT32_MIN);
  const int x = e.Emit("vxor.u32", {a, bias}), y = e.Emit("vxor.u32", {b, bias});
  const int r = CompareS32(e, direction, x, y);
  for (int reg : {x, y, bias}) e.Release(reg);
  return r;
}

int CompareS32(VpuEmitter& e, const std::string& direction, int a, int b) {
  if (direction == "LT") return e.Emit("vcmp.lt.s32", {a, b});
  if (direction == "LE") return e.Emit("vcmp.le.s32", {a, b});
  if (direction == "GT") return e.Emit("vcmp.lt.s32", {b, a});
  if (direction == "GE") return e.Emit("vcmp.le.s32", {b, a});
  if (direction == "EQ") return e.Emit("vcmp.eq.s32", {a, b});
  return e.Emit("vcmp.ne.s32", {a, b});
}

}  // namespace tpusim::lowering
