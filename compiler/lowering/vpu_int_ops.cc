// Integer and predicate elementwise ops from the VPU's 32-bit instructions.
#include "compiler/lowering/vpu_math.h"

namespace tpusim::lowering {
namespace {

using hlo::Opcode;
using hlo::PrimitiveType;

// Ops whose result bits do not depend on signedness.
bool BitwiseOrWrapping(Opcode op) {
  return op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor || op == Opcode::kNot ||
         op == Opcode::kNegate || op == Opcode::kMultiply;
}

bool SignedOnly(Opcode op) {
  return op == Opcode::kMaximum || op == Opcode::kMinimum || op == Opcode::kAbs ||
         op == Opcode::kSign || op == Opcode::kClamp;
}

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
  if (type == PrimitiveType::kU32) return BitwiseOrWrapping(op);
  return type == PrimitiveType::kS32 && (BitwiseOrWrapping(op) || SignedOnly(op));
}

int IntegerOp(VpuEmitter& e, Opcode op, PrimitiveType type, const std::vector<int>& srcs) {
  if (type == PrimitiveType::kPred) return PredicateOp(e, op, srcs);
  switch (op) {
    case Opcode::kAnd:
      return e.Emit("vand.u32", {srcs[0], srcs[1]});
    case Opcode::kOr:
      return e.Emit("vor.u32", {srcs[0], srcs[1]});
    case Opcode::kXor:
      return e.Emit("vxor.u32", {srcs[0], srcs[1]});
    case Opcode::kMultiply:  // the low 32 bits are the same signed or unsigned
      return e.Emit("vmul.u32", {srcs[0], srcs[1]});
    case Opcode::kMaximum:
      return e.Emit("vmax.s32", {srcs[0], srcs[1]});
    case Opcode::kMinimum:
      return e.Emit("vmin.s32", {srcs[0], srcs[1]});
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

int CompareS32(VpuEmitter& e, const std::string& direction, int a, int b) {
  if (direction == "LT") return e.Emit("vcmp.lt.s32", {a, b});
  if (direction == "LE") return e.Emit("vcmp.le.s32", {a, b});
  if (direction == "GT") return e.Emit("vcmp.lt.s32", {b, a});
  if (direction == "GE") return e.Emit("vcmp.le.s32", {b, a});
  if (direction == "EQ") return e.Emit("vcmp.eq.s32", {a, b});
  return e.Emit("vcmp.ne.s32", {a, b});
}

}  // namespace tpusim::lowering
