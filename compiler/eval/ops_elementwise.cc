// Elementwise ops: unary, binary, compare, select, clamp, convert, bitcast-convert.
#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

Result<Value> Unary(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value& x = *ops[0];
  Value out = Value::Zeros(instr.shape());
  for (int64_t i = 0; i < x.size(); ++i) {
    Result<double> r = UnaryScalar(instr.opcode(), x.type(), x.data[i]);
    if (!r.ok()) return InstrError(instr, r.status().message());
    out.data[i] = RoundTo(out.type(), *r);
  }
  return out;
}

Result<Value> Binary(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value &a = *ops[0], &b = *ops[1];
  if (a.size() != b.size()) return InstrError(instr, "operand shapes differ");
  std::string dir = instr.GetWord("direction").value_or("");
  const bool total_order = instr.GetWord("type").value_or("") == "TOTALORDER";
  Value out = Value::Zeros(instr.shape());
  for (int64_t i = 0; i < a.size(); ++i) {
    Result<double> r =
        BinaryScalar(instr.opcode(), a.type(), a.data[i], b.data[i], dir, total_order);
    if (!r.ok()) return InstrError(instr, r.status().message());
    out.data[i] = RoundTo(out.type(), *r);
  }
  return out;
}

// Element i of an operand that may be a scalar standing for a whole array.
double Elem(const Value& v, int64_t i) { return v.size() == 1 ? v.data[0] : v.data[i]; }

Result<Value> Select(const HloInstruction& instr, Operands ops, Interpreter&) {
  Value out = Value::Zeros(instr.shape());
  if (out.IsTuple()) return ops[0]->scalar() != 0 ? *ops[1] : *ops[2];
  for (int64_t i = 0; i < out.size(); ++i) {
    out.data[i] = Elem(*ops[0], i) != 0 ? ops[1]->data[i] : ops[2]->data[i];
  }
  return out;
}

Result<Value> Clamp(const HloInstruction& instr, Operands ops, Interpreter&) {
  Value out = Value::Zeros(instr.shape());
  PrimitiveType t = ops[1]->type();
  for (int64_t i = 0; i < out.size(); ++i) {
    Result<double> lo = BinaryScalar(Opcode::kMaximum, t, ops[1]->data[i], Elem(*ops[0], i));
    if (!lo.ok()) return InstrError(instr, lo.status().message());
    Result<double> r = BinaryScalar(Opcode::kMinimum, t, *lo, Elem(*ops[2], i));
    if (!r.ok()) return InstrError(instr, r.status().message());
    out.data[i] = RoundTo(t, *r);
  }
  return out;
}

Result<Value> Convert(const HloInstruction& instr, Operands ops, Interpreter&) {
  Value out = Value::Zeros(instr.shape());
  if (out.type() == PrimitiveType::kC64 || ops[0]->type() == PrimitiveType::kC64) {
    return InstrError(instr, "the evaluator does not support c64");
  }
  for (int64_t i = 0; i < out.size(); ++i) {
    out.data[i] = ConvertTo(ops[0]->type(), out.type(), ops[0]->data[i]);
  }
  return out;
}

Result<Value> BitcastConvert(const HloInstruction& instr, Operands ops, Interpreter&) {
  Value out = Value::Zeros(instr.shape());
  PrimitiveType from = ops[0]->type(), to = out.type();
  if (hlo::PrimitiveTypeBits(from) != hlo::PrimitiveTypeBits(to) || out.size() != ops[0]->size()) {
    return InstrError(instr, "bitcast-convert between types of different widths is not supported");
  }
  for (int64_t i = 0; i < out.size(); ++i)
    out.data[i] = FromBits(to, ToBits(from, ops[0]->data[i]));
  return out;
}

}  // namespace

void RegisterElementwise(OpTable& t) {
  for (size_t op = 0; op < t.size(); ++op) {
    hlo::OpCategory c = hlo::GetOpcodeInfo(static_cast<Opcode>(op)).category;
    if (c == hlo::OpCategory::kElementwiseUnary) t[op] = Unary;
    if (c == hlo::OpCategory::kElementwiseBinary) t[op] = Binary;
  }
  t[static_cast<size_t>(Opcode::kSelect)] = Select;
  t[static_cast<size_t>(Opcode::kClamp)] = Clamp;
  t[static_cast<size_t>(Opcode::kConvert)] = Convert;
  t[static_cast<size_t>(Opcode::kBitcastConvert)] = BitcastConvert;
}

}  // namespace tpusim::eval
