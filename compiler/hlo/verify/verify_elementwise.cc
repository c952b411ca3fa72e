// Verifier rules for elementwise ops.
#include "compiler/hlo/verify/verifier_impl.h"

namespace tpusim::hlo::verify {

Status VerifyElementwise(const HloModule&, const HloInstruction& i) {
  HLO_RETURN_IF_ERROR(ExpectArrayOperands(i));
  if (i.shape().IsTuple()) return Error(i, "result must be an array, not " + Str(i.shape()));
  const Shape& a = i.operand(0)->shape();
  const Opcode op = i.opcode();
  if (op == Opcode::kConvert || op == Opcode::kBitcastConvert) {
    if (op == Opcode::kBitcastConvert &&
        PrimitiveTypeBits(a.type) != PrimitiveTypeBits(i.shape().type)) {
      return Status::Ok();  // changes the last dimension; not modeled further
    }
    return ExpectShape(i, Shape::Array(i.shape().type, a.dims));
  }
  if (op == Opcode::kSelect || op == Opcode::kClamp) {
    const Shape& b = i.operand(1)->shape();
    const Shape& c = i.operand(2)->shape();
    if (op == Opcode::kSelect) {
      if (a.type != PrimitiveType::kPred) return Error(i, "predicate must be pred, not " + Str(a));
      if (!a.IsScalar() && a.dims != b.dims) {
        return Error(i, "predicate " + Str(a) + " does not match operand " + Str(b));
      }
      if (!b.Compatible(c)) {
        return Error(i, "on_true " + Str(b) + " and on_false " + Str(c) + " differ");
      }
      return ExpectShape(i, b);
    }
    for (const Shape* bound : {&a, &c}) {  // clamp(min, x, max)
      if (bound->type != b.type || (!bound->IsScalar() && bound->dims != b.dims)) {
        return Error(i, "clamp bound " + Str(*bound) + " does not match operand " + Str(b));
      }
    }
    return ExpectShape(i, b);
  }
  for (size_t k = 1; k < i.operand_count(); ++k) {
    const Shape& b = i.operand(k)->shape();
    if (a.dims != b.dims) {
      return Error(i, "operand shapes " + Str(a) + " and " + Str(b) +
                          " differ (HLO has no implicit broadcasting; use broadcast)");
    }
    if (a.type != b.type) {
      return Error(i, "operand element types " + std::string(PrimitiveTypeName(a.type)) + " and " +
                          std::string(PrimitiveTypeName(b.type)) + " differ");
    }
  }
  bool logical =
      op == Opcode::kAnd || op == Opcode::kOr || op == Opcode::kXor || op == Opcode::kNot;
  if (logical && !IsIntegralType(a.type) && a.type != PrimitiveType::kPred) {
    return Error(i, std::string(OpcodeName(op)) + " needs pred or integer operands, not " + Str(a));
  }
  const bool shift = op == Opcode::kShiftLeft || op == Opcode::kShiftRightArithmetic ||
                     op == Opcode::kShiftRightLogical;
  if (shift && !IsIntegralType(a.type)) {
    return Error(i, std::string(OpcodeName(op)) + " needs integer operands, not " + Str(a));
  }
  if (op == Opcode::kCompare) {
    std::optional<std::string> dir = i.GetWord("direction");
    if (!dir) return Error(i, "compare needs direction=EQ|NE|LT|LE|GT|GE");
    if (*dir != "EQ" && *dir != "NE" && *dir != "LT" && *dir != "LE" && *dir != "GT" &&
        *dir != "GE") {
      return Error(i, "unknown comparison direction " + *dir);
    }
    return ExpectShape(i, Shape::Array(PrimitiveType::kPred, a.dims));
  }
  // As XLA's shape inference: rounding, erf and is-finite are defined on real floating-point
  // elements only, the transcendental functions on floating-point or complex ones.
  const bool real_only = op == Opcode::kErf || op == Opcode::kIsFinite ||
                         op == Opcode::kRoundNearestAfz || op == Opcode::kRoundNearestEven ||
                         op == Opcode::kFloor || op == Opcode::kCeil;
  if (real_only && (!IsFloatingType(a.type) || a.type == PrimitiveType::kC64)) {
    return Error(i, std::string(OpcodeName(op)) + " needs a floating-point operand, not " + Str(a));
  }
  const bool transcendental = op == Opcode::kExp || op == Opcode::kExpm1 || op == Opcode::kLog ||
                              op == Opcode::kLog1p || op == Opcode::kLogistic ||
                              op == Opcode::kTanh || op == Opcode::kRsqrt || op == Opcode::kSqrt ||
                              op == Opcode::kSin || op == Opcode::kCos;
  if (transcendental && !IsFloatingType(a.type)) {
    return Error(i, std::string(OpcodeName(op)) +
                        " needs a floating-point or complex operand, not " + Str(a));
  }
  if (op == Opcode::kIsFinite) return ExpectShape(i, Shape::Array(PrimitiveType::kPred, a.dims));
  Shape want = Shape::Array(a.type, a.dims);
  if (op == Opcode::kAbs && a.type == PrimitiveType::kC64) want.type = PrimitiveType::kF32;
  return ExpectShape(i, want);
}

}  // namespace tpusim::hlo::verify
