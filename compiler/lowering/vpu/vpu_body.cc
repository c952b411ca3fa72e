#include "compiler/lowering/vpu/vpu_body.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "compiler/hlo/opcode.h"
#include "compiler/lowering/driver/op_context.h"
#include "compiler/lowering/vpu/vpu_math.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

bool Int32(const hlo::Shape& s) {
  return s.IsArray() && (s.type == hlo::PrimitiveType::kS32 || s.type == hlo::PrimitiveType::kU32);
}

constexpr int kFirstTemp = 6, kLastTemp = 23, kFirstConst = 24, kLastConst = 30;

class BodyBuilder : public VpuEmitter {
 public:
  BodyBuilder(VpuBody& b, bool mapped_broadcasts, int first_temp, int first_const = kFirstConst,
              int last_const = kLastConst)
      : b_(b),
        mapped_(mapped_broadcasts),
        first_temp_(first_temp),
        next_temp_(first_temp),
        next_const_(first_const),
        last_const_(last_const) {}

  // A constant's register, with `value` as the bits of an s32 when `s32` (else an f32);
  // `local` (a fusion parameter) then stands for that value.
  int ConstantReg(double value, bool s32, const HloInstruction* local) {
    known_[local] = value;
    return Constant(value, s32);
  }
  static std::optional<double> ConstantValue(const HloInstruction* i) {
    return ScalarConstantImpl(i);
  }

  // The vreg holding `instr`'s value, emitting what computes it. Operands are computed as
  // Compute asks for them; past kMaxDepth nested computations, every operand below `instr`
  // is computed first, deepest first, so a long chain of ops does not nest a frame per op.
  int Value(const HloInstruction* instr, const std::map<const HloInstruction*, int>& bound) {
    if (auto it = bound.find(instr); it != bound.end()) return it->second;
    if (auto it = reg_.find(instr); it != reg_.end()) return it->second;
    if (depth_ >= kMaxDepth) ComputeOperandsFirst(instr, bound);
    ++depth_;
    const int r = Compute(instr, bound);
    --depth_;
    return reg_[instr] = r;
  }

  int Emit(const std::string& mnemonic, std::vector<int> srcs) override {
    const int d = Temp();
    EmitTo(d, mnemonic, std::move(srcs));
    return d;
  }
  void EmitTo(int dst, const std::string& mnemonic, std::vector<int> srcs) override {
    std::string line = mnemonic + " v" + std::to_string(dst);
    for (int s : srcs) line += ", v" + std::to_string(s);
    b_.body.push_back(line);
    ++b_.ops;
  }
  int EmitImm(const std::string& mnemonic, int src, int64_t imm) override {
    const int d = Temp();
    b_.body.push_back(mnemonic + " v" + std::to_string(d) + ", v" + std::to_string(src) + ", " +
                      std::to_string(imm));
    ++b_.ops;
    return d;
  }
  int F32(double v) override { return Constant(v, /*s32=*/false); }
  int S32(int64_t v) override { return Constant(static_cast<double>(v), /*s32=*/true); }
  // Only temps go back to the pool: inputs and the prologue's constants stay.
  void Release(int reg) override {
    if (reg >= first_temp_ && reg <= kLastTemp) free_.push_back(reg);
  }

 private:
  static constexpr int kMaxDepth = 1000;

  // Post-order over what lies below `instr` and is neither bound nor computed: each value
  // then finds its operands computed (no recursion over the instruction graph).
  void ComputeOperandsFirst(const HloInstruction* instr,
                            const std::map<const HloInstruction*, int>& bound) {
    std::vector<std::pair<const HloInstruction*, size_t>> stack = {{instr, 0}};
    std::set<const HloInstruction*> seen = {instr};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->operand_count()) {
        const HloInstruction* o = node->operand(next++);
        if (!bound.count(o) && !reg_.count(o) && seen.insert(o).second) stack.push_back({o, 0});
        continue;
      }
      const HloInstruction* done = node;
      stack.pop_back();
      if (done != instr && !reg_.count(done)) reg_[done] = Compute(done, bound);
    }
  }

  int Temp() {
    if (!free_.empty()) {
      const int r = free_.back();
      free_.pop_back();
      return r;
    }
    int r = next_temp_++;
    if (next_temp_ > kLastTemp) next_temp_ = kFirstTemp, b_.exact = false;  // reuse: cost only
    return r;
  }
  static std::optional<double> ScalarConstant(const HloInstruction* i) {
    return ScalarConstantImpl(i);
  }

  int Constant(double v, bool s32 = false) {
    const float f = static_cast<float>(v);
    const uint32_t bits =
        s32 ? static_cast<uint32_t>(static_cast<int64_t>(v)) : std::bit_cast<uint32_t>(f);
    const uint64_t key = (uint64_t{s32} << 32) | bits;
    if (auto it = consts_.find(key); it != consts_.end()) return it->second;
    // Past the prologue's registers a constant is set in the body, where it is used: one
    // more ALU op per vreg.
    const bool in_body = next_const_ > last_const_;
    const int r = in_body ? Temp() : next_const_++;
    char text[64];
    if (s32)
      std::snprintf(text, sizeof text, "vmovi v%d, f32:0x%08x", r, bits);
    else
      std::snprintf(text, sizeof text, "vmovi v%d, %.9g", r, v);
    if (!in_body) {
      b_.prologue.push_back(text);
      return consts_[key] = r;
    }
    b_.body.push_back(text);
    ++b_.ops;
    return r;
  }
  // The value of `i` when it is a scalar constant or stands for one.
  std::optional<double> Known(const HloInstruction* i) const {
    if (auto it = known_.find(i); it != known_.end()) return it->second;
    return ScalarConstantImpl(i);
  }
  // The value of `i` when it is a scalar constant, or a broadcast of one, or stands for one.
  std::optional<double> KnownScalar(const HloInstruction* i) const {
    while ((i->opcode() == Opcode::kBroadcast && i->operand(0)->shape().IsScalar()) ||
           i->opcode() == Opcode::kReshape || i->opcode() == Opcode::kBitcast)
      i = i->operand(0);
    return Known(i);
  }
  // x * c on s32 bit patterns, wrapping as XLA's: x times the set bits of |c| by doubling
  // and adding (vadd.s32), negated for c < 0.
  int MultiplyS32(int x, int64_t c) {
    uint64_t u = c < 0 ? 0 - static_cast<uint64_t>(c) : static_cast<uint64_t>(c);
    u &= 0xffffffffu;
    if (u == 0) return Constant(0, /*s32=*/true);
    int acc = -1, power = x;
    for (; u; u >>= 1) {
      if (u & 1) acc = acc < 0 ? power : Emit("vadd.s32", {acc, power});
      if (u > 1) power = Emit("vadd.s32", {power, power});
    }
    return c < 0 ? Emit("vsub.s32", {Constant(0, /*s32=*/true), acc}) : acc;
  }
  // x^c for a constant c >= 0 on s32 or u32 bits: square-and-multiply unrolled at compile
  // time (wrapping, as the evaluator).
  int PowerByConstant(int x, uint64_t c) {
    if (c == 0) return Constant(1, /*s32=*/true);
    int acc = -1, power = x;
    for (; c; c >>= 1) {
      if (c & 1) acc = acc < 0 ? power : Emit("vmul.u32", {acc, power});
      if (c > 1) power = Emit("vmul.u32", {power, power});
    }
    return acc;
  }
  // pow(c, y) for a scalar constant base c: exp(y * log(c)) with log(c) folded at compile
  // time; within a few f32 ulps of pow times |y log c| (bf16 tolerance for |y| < 10^4).
  // Any other base (or a negative or zero one): FloatPower's composition.
  int Power(const HloInstruction* i, const std::map<const HloInstruction*, int>& bound) {
    const std::optional<double> c = Known(i->operand(0));
    const int y = Value(i->operand(1), bound);
    if (c && *c == 1) return Constant(1.0);  // pow(1, y) = 1, even for a NaN y
    if (c && *c > 0 && std::isfinite(*c)) {
      const double log_c = std::log(static_cast<double>(static_cast<float>(*c)));
      return Emit("vexp", {Emit("vmul", {y, Constant(log_c)})});
    }
    return FloatPower(*this, Value(i->operand(0), bound), y);
  }
  static std::optional<double> ScalarConstantImpl(const HloInstruction* i) {
    while (i->opcode() == Opcode::kBroadcast || i->opcode() == Opcode::kReshape ||
           i->opcode() == Opcode::kConvert || i->opcode() == Opcode::kBitcast) {
      if (i->opcode() == Opcode::kBroadcast && !i->operand(0)->shape().IsScalar()) return {};
      i = i->operand(0);
    }
    if (i->opcode() != Opcode::kConstant || !i->shape().IsScalar()) return {};
    const hlo::Literal& l = i->literal();
    if (!l.floats.empty()) return l.floats[0];
    if (!l.ints.empty()) return static_cast<double>(l.ints[0]);
    return {};
  }

  int Compute(const HloInstruction* i, const std::map<const HloInstruction*, int>& bound) {
    if (auto c = ScalarConstant(i)) return Constant(*c, Int32(i->shape()));
    auto in = [&](int k) { return Value(i->operand(k), bound); };
    // s32 and u32 elements are bit patterns, pred ones 1.0 or 0.0: their ops have integer
    // forms (vpu_int_ops.cc, vpu_uint_ops.cc).
    const bool ints = Int32(i->shape()) && i->opcode() != Opcode::kSelect &&
                      i->opcode() != Opcode::kConvert && i->opcode() != Opcode::kBroadcast &&
                      i->opcode() != Opcode::kCopy && i->opcode() != Opcode::kBitcast &&
                      i->opcode() != Opcode::kBitcastConvert && i->opcode() != Opcode::kReshape;
    if (ints && i->opcode() == Opcode::kAdd) return Emit("vadd.s32", {in(0), in(1)});
    if (ints && i->opcode() == Opcode::kSubtract) return Emit("vsub.s32", {in(0), in(1)});
    if (ints && i->opcode() == Opcode::kMultiply)
      for (int k : {1, 0})
        if (const std::optional<double> c = KnownScalar(i->operand(k)))
          return MultiplyS32(in(1 - k), static_cast<int64_t>(*c));
    if (ints && i->opcode() == Opcode::kPower)
      if (const std::optional<double> c = KnownScalar(i->operand(1)); c && *c >= 0)
        return PowerByConstant(in(0), static_cast<uint64_t>(*c));
    if ((ints || i->shape().type == hlo::PrimitiveType::kPred) &&
        HasIntegerForm(i->opcode(), i->shape().type)) {
      std::vector<int> srcs;
      for (size_t k = 0; k < i->operand_count(); ++k) srcs.push_back(in(static_cast<int>(k)));
      return IntegerOp(*this, i->opcode(), i->shape().type, srcs);
    }
    if (ints) b_.exact = false;
    switch (i->opcode()) {
      case Opcode::kAdd:
        return Emit("vadd", {in(0), in(1)});
      case Opcode::kSubtract:
        return Emit("vsub", {in(0), in(1)});
      case Opcode::kMultiply:
        return Emit("vmul", {in(0), in(1)});
      case Opcode::kDivide:
        return Emit("vdiv", {in(0), in(1)});
      case Opcode::kMaximum:
        return Emit("vmax", {in(0), in(1)});
      case Opcode::kMinimum:
        return Emit("vmin", {in(0), in(1)});
      case Opcode::kAbs:
        return Emit("vabs", {in(0)});
      case Opcode::kNegate:
        return Emit("vneg", {in(0)});
      case Opcode::kExp:
        return Emit("vexp", {in(0)});
      case Opcode::kLog:
        return Emit("vlog", {in(0)});
      case Opcode::kTanh:
        return Emit("vtanh", {in(0)});
      case Opcode::kRsqrt:
        return Emit("vrsqrt", {in(0)});
      case Opcode::kSqrt:
        return Emit("vsqrt", {in(0)});
      case Opcode::kSelect:
        return Emit("vsel", {in(0), in(1), in(2)});
      case Opcode::kLogistic: {  // 1 / (1 + exp(-x))
        int one = Constant(1.0);
        int e = Emit("vexp", {Emit("vneg", {in(0)})});
        return Emit("vdiv", {one, Emit("vadd", {e, one})});
      }
      case Opcode::kExpm1:
        return Emit("vsub", {Emit("vexp", {in(0)}), Constant(1.0)});
      case Opcode::kLog1p:
        return Emit("vlog", {Emit("vadd", {in(0), Constant(1.0)})});
      case Opcode::kCompare: {
        const std::string dir = i->GetWord("direction").value_or("");
        const hlo::PrimitiveType operands = i->operand(0)->shape().type;
        if (i->GetWord("type").value_or("") == "TOTALORDER" &&
            (operands == hlo::PrimitiveType::kF32 ||
             operands == hlo::PrimitiveType::kBF16)) {  // as s32 keys (vpu_uint_ops.cc)
          const int a = TotalOrderKey(*this, in(0)), b = TotalOrderKey(*this, in(1));
          const int r = CompareS32(*this, dir, a, b);
          Release(a);
          Release(b);
          return r;
        }
        if (operands == hlo::PrimitiveType::kS32) return CompareS32(*this, dir, in(0), in(1));
        if (operands == hlo::PrimitiveType::kU32) return CompareU32(*this, dir, in(0), in(1));
        if (dir == "LT") return Emit("vcmp.lt", {in(0), in(1)});
        if (dir == "LE") return Emit("vcmp.le", {in(0), in(1)});
        if (dir == "GT") return Emit("vcmp.lt", {in(1), in(0)});
        if (dir == "GE") return Emit("vcmp.le", {in(1), in(0)});
        if (dir == "EQ") return Emit("vcmp.eq", {in(0), in(1)});
        return Emit("vcmp.ne", {in(0), in(1)});
      }
      case Opcode::kConvert: {
        const hlo::PrimitiveType t = i->shape().type;
        const hlo::PrimitiveType from = i->operand(0)->shape().type;
        if (from == hlo::PrimitiveType::kS32 && t == hlo::PrimitiveType::kF32)
          return Emit("vcvt.f32.s32", {in(0)});
        if (Int32(i->shape()) && Int32(i->operand(0)->shape())) return in(0);    // same bits
        if (from == hlo::PrimitiveType::kS32 && t == hlo::PrimitiveType::kBF16)  // via f32,
          return Emit("vcvt.bf16", {Emit("vcvt.f32.s32", {in(0)})});             // as XLA rounds it
        if (Int32(i->operand(0)->shape()) && t == hlo::PrimitiveType::kPred)
          return CompareS32(*this, "NE", in(0), S32(0));
        const bool real = from == hlo::PrimitiveType::kF32 || from == hlo::PrimitiveType::kBF16 ||
                          from == hlo::PrimitiveType::kPred;  // pred is 1.0 or 0.0
        if (real && t == hlo::PrimitiveType::kS32) return Emit("vcvt.s32.f32", {in(0)});
        if (real && t == hlo::PrimitiveType::kPred) return Emit("vcmp.ne", {in(0), S32(0)});
        if (real && t == hlo::PrimitiveType::kU32) return ConvertF32ToU32(*this, in(0));
        if (from == hlo::PrimitiveType::kU32 && t == hlo::PrimitiveType::kF32)
          return ConvertU32ToF32(*this, in(0));
        if (from == hlo::PrimitiveType::kU32 && t == hlo::PrimitiveType::kBF16)  // via f32
          return Emit("vcvt.bf16", {ConvertU32ToF32(*this, in(0))});
        if (t == hlo::PrimitiveType::kBF16) return Emit("vcvt.bf16", {in(0)});
        if (t == hlo::PrimitiveType::kF32) return in(0);
        b_.exact = false;
        return in(0);
      }
      case Opcode::kCopy:
      case Opcode::kBitcast:
      case Opcode::kReshape:
        return in(0);
      case Opcode::kBitcastConvert:  // 32-bit to 32-bit: the same bits (vregs hold words)
        if (!IsWord32(i->shape()) || !IsWord32(i->operand(0)->shape())) b_.exact = false;
        return in(0);
      case Opcode::kBroadcast:  // a scalar fills the vreg; anything else is costed only
        if (!i->operand(0)->shape().IsScalar() && !mapped_) b_.exact = false;
        return in(0);
      case Opcode::kPower:
        return Power(i, bound);
      case Opcode::kFloor:
        return Emit("vfloor", {in(0)});
      case Opcode::kCeil:
        return Emit("vceil", {in(0)});
      case Opcode::kRoundNearestEven:
        return Emit("vround.even", {in(0)});
      case Opcode::kRoundNearestAfz:
        return RoundHalfAwayFromZero(*this, in(0));
      case Opcode::kSign:
        return FloatSign(*this, in(0));
      case Opcode::kErf:
        return FloatErf(*this, in(0));
      case Opcode::kIsFinite:
        return FloatIsFinite(*this, in(0));
      case Opcode::kSin:
        return SineOrCosine(*this, in(0), /*cosine=*/false);
      case Opcode::kCos:
        return SineOrCosine(*this, in(0), /*cosine=*/true);
      case Opcode::kRemainder:
        return FloatRemainder(*this, in(0), in(1));
      case Opcode::kClamp: {  // clamp(lo, x, hi) = min(max(x, lo), hi); a NaN x stays NaN
        const int x = in(1), r = Emit("vmax", {x, in(0)});
        EmitTo(r, "vmin", {r, in(2)});
        const int nan = Emit("vcmp.ne", {x, x});
        EmitTo(r, "vsel", {nan, x, r});
        Release(nan);
        return r;
      }
      default: {  // sine, floor, clamp, bitwise, ...: one or two ALU operations' cost
        b_.exact = false;
        if (i->operand_count() == 0) return Constant(0.0);  // an iota or rng fused in: its cost
        int r = in(0);
        for (size_t k = 1; k < i->operand_count(); ++k)
          r = Emit("vmax", {r, in(static_cast<int>(k))});
        return i->operand_count() > 1 ? r : Emit("vabs", {r});
      }
    }
  }

  VpuBody& b_;
  bool mapped_ = false;
  std::map<const HloInstruction*, int> reg_;
  int depth_ = 0;                                  // Compute calls in progress
  std::map<uint64_t, int> consts_;                 // by s32 flag and bits
  std::map<const HloInstruction*, double> known_;  // parameters bound to constants
  int first_temp_ = kFirstTemp, next_temp_ = kFirstTemp, next_const_ = kFirstConst,
      last_const_ = kLastConst;
  std::vector<int> free_;  // temps released by a composition, reused first
};

// Binds the values `op` reads (a fusion's parameters, else its operands) in `bound`: scalar
// constants to constant registers, inlined producers to their expression, the rest to
// input registers.
void BindLeaves(const HloInstruction& op, VpuBody& b, BodyBuilder& builder,
                std::map<const HloInstruction*, int>& bound, bool mapped, bool inline_pred,
                int max_inputs) {
  const bool fusion = op.opcode() == Opcode::kFusion && op.fused_computation();
  auto bind = [&](const HloInstruction* local, const HloInstruction* outside) {
    // A scalar constant is an immediate everywhere: it has no HBM buffer to splat from (a
    // clamp's constant bounds read whatever lay at its address; found by scripts/difftest.py).
    if (auto c = BodyBuilder::ConstantValue(outside)) {
      bound[local] = builder.ConstantReg(*c, Int32(outside->shape()), local);
      return;
    }
    if (mapped && inline_pred && InlinedIntoUsers(*outside)) {
      std::map<const HloInstruction*, int> inner;
      BindLeaves(*outside, b, builder, inner, mapped, /*inline_pred=*/false, max_inputs);
      const HloInstruction* root =
          outside->opcode() == Opcode::kFusion ? outside->fused_computation()->root() : outside;
      bound[local] = builder.Value(root, inner);
      return;
    }
    int slot = static_cast<int>(b.inputs.size());
    if (slot >= max_inputs) {
      slot = max_inputs - 1, b.exact = false;  // merged: cost only
    } else {
      b.inputs.push_back(outside);
      b.input_locals.push_back(local);
    }
    bound[local] = slot;
  };
  if (fusion) {
    for (const HloInstruction* p : op.fused_computation()->parameters())
      bind(p, op.operand(static_cast<size_t>(p->parameter_number())));
  } else {
    for (const HloInstruction* o : op.operands()) bind(o, o);
  }
}

VpuBody BuildVpuBodyFrom(const HloInstruction& op, bool mapped_broadcasts, int max_inputs,
                         int first_temp) {
  VpuBody b;
  BodyBuilder builder(b, mapped_broadcasts, first_temp);
  std::map<const HloInstruction*, int> bound;  // values that arrive from HBM
  BindLeaves(op, b, builder, bound, mapped_broadcasts, /*inline_pred=*/true, max_inputs);
  // Over 6 inputs, the temps start after them: built again once their count is known.
  if (static_cast<int>(b.inputs.size()) > first_temp)
    return BuildVpuBodyFrom(op, mapped_broadcasts, max_inputs, static_cast<int>(b.inputs.size()));
  const HloInstruction* root = op.opcode() == Opcode::kFusion && op.fused_computation()
                                   ? op.fused_computation()->root()
                                   : &op;
  if (root->opcode() == Opcode::kTuple && root != &op) {  // a multi-output loop fusion
    for (const HloInstruction* e : root->operands()) b.results.push_back(builder.Value(e, bound));
    b.result = b.results.empty() ? 0 : b.results.front();
  } else {
    b.result = builder.Value(root, bound);
    b.results = {b.result};
  }
  if (b.body.empty() && !mapped_broadcasts) {  // a move (copy, f32 <-> bf16 widening): the
    // stream needs one instruction; an OR of the value with itself keeps every bit
    const std::string r = "v" + std::to_string(b.result);
    b.body.push_back("vor.u32 " + r + ", " + r + ", " + r);
  }
  return b;
}

}  // namespace

VpuBody BuildVpuBody(const HloInstruction& op, bool mapped_broadcasts, int max_inputs) {
  return BuildVpuBodyFrom(op, mapped_broadcasts, max_inputs, kFirstTemp);
}

ReducerBody BuildReducerBody(
    const std::map<const HloInstruction*, int>& regs,
    const std::map<const HloInstruction*, const HloInstruction*>& constants,
    const std::vector<const HloInstruction*>& values, const std::vector<int>& accs,
    const hlo::HloComputation& f, int first_temp) {
  VpuBody b;
  BodyBuilder builder(b, /*mapped_broadcasts=*/true, first_temp);
  std::map<const HloInstruction*, int> bound = regs;
  for (const auto& [local, outside] : constants)
    if (auto c = BodyBuilder::ConstantValue(outside))
      bound[local] = builder.ConstantReg(*c, Int32(outside->shape()), local);
  std::vector<int> value_regs;
  for (const HloInstruction* v : values) value_regs.push_back(builder.Value(v, bound));
  std::map<const HloInstruction*, int> reducer;
  for (const HloInstruction* p : f.parameters()) {
    const size_t k = static_cast<size_t>(p->parameter_number());
    reducer[p] = k < accs.size() ? accs[k] : value_regs.at(k - accs.size());
  }
  ReducerBody r;
  const HloInstruction* root = f.root();
  if (root->opcode() == Opcode::kTuple) {
    for (const HloInstruction* o : root->operands()) r.results.push_back(builder.Value(o, reducer));
  } else {
    r.results.push_back(builder.Value(root, reducer));
  }
  r.prologue = std::move(b.prologue), r.body = std::move(b.body), r.exact = b.exact;
  return r;
}

ReducerBody BuildExpressionBody(const std::map<const HloInstruction*, int>& bound,
                                const HloInstruction& root, int first_temp, int first_const,
                                int last_const) {
  VpuBody b;
  BodyBuilder builder(b, /*mapped_broadcasts=*/false, first_temp, first_const, last_const);
  ReducerBody r;
  r.results.push_back(builder.Value(&root, bound));
  r.prologue = std::move(b.prologue), r.body = std::move(b.body), r.exact = b.exact;
  return r;
}

}  // namespace tpusim::lowering
