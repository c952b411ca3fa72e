// Values from nothing: constant, iota, rng, rng-bit-generator.
#include <algorithm>
#include <cmath>

#include "compiler/eval/counter_rng.h"
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

// A uniform double in [0, 1) from the 24 bits an f32 draw uses.
double Uniform01(uint32_t bits) { return static_cast<double>(bits >> 8) * 0x1p-24; }

// rng(a, b): RNG_UNIFORM draws from [a, b) (f32: as RngUniformF32 computes it on the VPU),
// RNG_NORMAL from N(a, b^2) by Box-Muller over elements 2i and 2i + 1 of the draw, in f32
// as the VPU computes it (RngNormalF32).
Result<Value> Rng(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  std::string dist = instr.GetWord("distribution").value_or("RNG_UNIFORM");
  double a = ops[0]->scalar(), b = ops[1]->scalar();
  Value out = Value::Zeros(instr.shape());
  bool is_float = hlo::IsFloatingType(out.type());
  const uint64_t key =
      RngOpKey(interp.options().rng_seed, instr.name(), interp.RngExecution(instr));
  for (size_t i = 0; i < out.data.size(); ++i) {
    double& x = out.data[i];
    const uint32_t counter = static_cast<uint32_t>(i);
    if (dist == "RNG_NORMAL") {
      x = RngNormalF32(RngBits32(key, 2 * counter), RngBits32(key, 2 * counter + 1),
                       static_cast<float>(a), static_cast<float>(b));
    } else if (dist == "RNG_UNIFORM") {
      const uint32_t bits = RngBits32(key, counter);
      if (out.type() == PrimitiveType::kF32)
        x = RngUniformF32(bits, static_cast<float>(a), static_cast<float>(b));
      else
        x = is_float ? a + (b - a) * Uniform01(bits) : a + std::floor((b - a) * Uniform01(bits));
    } else {
      return InstrError(instr, "unknown distribution " + dist);
    }
    x = RoundTo(out.type(), x);
    if (is_float && dist == "RNG_UNIFORM" && x >= b && b > a) x = a;  // keep [a, b)
  }
  return out;
}

// rng-bit-generator(state) -> (new state, bits). The key folds options.rng_seed with the
// state (counter_rng.h), element i of 32-bit bits is RngBits32(key, i), of 64-bit ones the
// words 2i (low) and 2i + 1; the new state is the old one with its first element advanced
// by the number of outputs.
Result<Value> RngBitGenerator(const HloInstruction& instr, Operands ops, Interpreter& interp) {
  if (!instr.shape().IsTuple() || instr.shape().tuple_shapes.size() != 2) {
    return InstrError(instr, "expects a (state, bits) result");
  }
  const Value& state = *ops[0];
  uint64_t key = RngStateKeyStart(interp.options().rng_seed);
  for (double s : state.data) key = RngStateKeyFold(key, ToBits(state.type(), s));
  Value bits = Value::Zeros(instr.shape().tuple_shapes[1]);
  int width = hlo::PrimitiveTypeBits(bits.type());
  for (size_t i = 0; i < bits.data.size(); ++i) {
    const uint32_t counter = static_cast<uint32_t>(i);
    uint64_t z = RngBits32(key, width > 32 ? 2 * counter : counter);
    if (width > 32) z |= uint64_t{RngBits32(key, 2 * counter + 1)} << 32;
    if (width < 64) z &= (uint64_t{1} << width) - 1;
    bits.data[i] = FromBits(bits.type(), z);
  }
  Value next = state;
  if (next.size() > 0) next.data[0] = RoundTo(next.type(), next.data[0] + bits.size());
  return Value::Tuple({std::move(next), std::move(bits)});
}

// The device's replica (replica-id) or partition (partition-id): the interpreter's index is
// the global device id, replica * num_partitions + partition.
Result<Value> DeviceIndex(const HloInstruction& instr, Operands, Interpreter& interp) {
  Value v = Value::Zeros(instr.shape());
  const int64_t parts = std::max<int64_t>(1, interp.num_partitions());
  const int64_t device = interp.replica_id();
  v.data[0] =
      static_cast<double>(instr.opcode() == Opcode::kReplicaId ? device / parts : device % parts);
  return v;
}

}  // namespace

void RegisterSources(OpTable& t) {
  t[static_cast<size_t>(Opcode::kReplicaId)] = DeviceIndex;
  t[static_cast<size_t>(Opcode::kPartitionId)] = DeviceIndex;
  t[static_cast<size_t>(Opcode::kConstant)] = Constant;
  t[static_cast<size_t>(Opcode::kIota)] = Iota;
  t[static_cast<size_t>(Opcode::kRng)] = Rng;
  t[static_cast<size_t>(Opcode::kRngBitGenerator)] = RngBitGenerator;
}

}  // namespace tpusim::eval
