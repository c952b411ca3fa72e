// Values from nothing: constant, iota, rng, rng-bit-generator.
#include <cmath>
#include <numbers>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

Result<Value> Constant(const HloInstruction& instr, Operands, Interpreter&) {
  const hlo::Literal& lit = instr.literal();
  if (lit.elided) {
    return InstrError(instr, "constant values are elided ({...}); the evaluator needs them");
  }
  if (instr.shape().IsTuple() || instr.shape().type == PrimitiveType::kC64) {
    return InstrError(instr, "tuple and c64 constants are not supported");
  }
  std::vector<double> values;
  if (hlo::IsFloatingType(instr.shape().type)) {
    values = lit.floats;
  } else {
    for (int64_t v : lit.ints) values.push_back(static_cast<double>(v));
  }
  if (static_cast<int64_t>(values.size()) != instr.shape().ElementCount()) {
    return InstrError(instr, "constant has " + std::to_string(values.size()) + " values");
  }
  return Value::FromVector(instr.shape(), std::move(values));
}

Result<Value> Iota(const HloInstruction& instr, Operands, Interpreter&) {
  int64_t dim = instr.GetInt("iota_dimension").value_or(0);
  Value out = Value::Zeros(instr.shape());
  if (dim < 0 || dim >= out.shape.rank()) return InstrError(instr, "bad iota_dimension");
  std::vector<int64_t> idx(out.shape.rank(), 0);
  for (int64_t i = 0; i < out.size(); ++i, NextIndex(idx, out.dims())) {
    out.data[i] = RoundTo(out.type(), static_cast<double>(idx[dim]));
  }
  return out;
}

double Uniform01(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1p-53; }

// rng(a, b): RNG_UNIFORM draws from [a, b), RNG_NORMAL from N(a, b^2).
Result<Value> Rng(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  std::string dist = instr.GetWord("distribution").value_or("RNG_UNIFORM");
  double a = ops[0]->scalar(), b = ops[1]->scalar();
  Value out = Value::Zeros(instr.shape());
  bool is_float = hlo::IsFloatingType(out.type());
  for (double& x : out.data) {
    double u = Uniform01(interp.NextRandom());
    if (dist == "RNG_NORMAL") {
      double u2 = Uniform01(interp.NextRandom());
      x = a + b * std::sqrt(-2 * std::log1p(-u)) * std::cos(2 * std::numbers::pi * u2);
    } else if (dist == "RNG_UNIFORM") {
      x = is_float ? a + (b - a) * u : a + std::floor((b - a) * u);
    } else {
      return InstrError(instr, "unknown distribution " + dist);
    }
    x = RoundTo(out.type(), x);
    if (is_float && dist == "RNG_UNIFORM" && x >= b && b > a) x = a;  // keep [a, b)
  }
  return out;
}

// rng-bit-generator(state) -> (new state, bits). The bits are a splitmix64 stream keyed by
// options.rng_seed and the state, not XLA's Philox/ThreeFry stream; the state advances.
Result<Value> RngBitGenerator(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  if (!instr.shape().IsTuple() || instr.shape().tuple_shapes.size() != 2) {
    return InstrError(instr, "expects a (state, bits) result");
  }
  const Value& state = *ops[0];
  uint64_t key = interp.options().rng_seed * 0x9e3779b97f4a7c15ull;
  for (double s : state.data) key = (key ^ ToBits(state.type(), s)) * 0x100000001b3ull;
  Value bits = Value::Zeros(instr.shape().tuple_shapes[1]);
  int width = hlo::PrimitiveTypeBits(bits.type());
  for (double& x : bits.data) {
    uint64_t z = (key += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    if (width < 64) z &= (uint64_t{1} << width) - 1;
    x = FromBits(bits.type(), z);
  }
  Value next = state;
  if (next.size() > 0) next.data[0] = RoundTo(next.type(), next.data[0] + bits.size());
  return Value::Tuple({std::move(next), std::move(bits)});
}

}  // namespace

void RegisterSources(OpTable& t) {
  t[static_cast<size_t>(Opcode::kConstant)] = Constant;
  t[static_cast<size_t>(Opcode::kIota)] = Iota;
  t[static_cast<size_t>(Opcode::kRng)] = Rng;
  t[static_cast<size_t>(Opcode::kRngBitGenerator)] = RngBitGenerator;
}

}  // namespace tpusim::eval
