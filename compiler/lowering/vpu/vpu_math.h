// Elementwise ops the VPU has no single instruction for, composed from VPU instructions as
// XLA's TPU backend expands them: sine and cosine (range reduction and polynomials), f32
// remainder, sign, erf, round-nearest-afz, is-finite, and integer forms built from the 32-bit
// instructions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/opcode.h"
#include "compiler/hlo/shape.h"

namespace tpusim::lowering {

// What a composition needs from the body it is emitted into.
class VpuEmitter {
 public:
  virtual ~VpuEmitter() = default;
  // `mnemonic` reading `srcs` into a fresh temp register; returns it.
  virtual int Emit(const std::string& mnemonic, std::vector<int> srcs) = 0;
  // `mnemonic` into `dst` (a temp the caller emitted), which may also be one of `srcs`.
  virtual void EmitTo(int dst, const std::string& mnemonic, std::vector<int> srcs) = 0;
  // `mnemonic` of `src` and an immediate (vshr.u32: the shift) into a fresh temp.
  virtual int EmitImm(const std::string& mnemonic, int src, int64_t imm) = 0;
  // A register holding `v` in every element, as an f32 or as an s32 bit pattern.
  virtual int F32(double v) = 0;
  virtual int S32(int64_t v) = 0;
  // `reg` (a temp the caller emitted, or a constant) is read no more.
  virtual void Release(int reg) = 0;
};

// A VpuEmitter over fixed registers, for hand-written kernels: temps from `temps`, constants
// set once by `prologue` in `constant_regs` and, when those run out, in the body in a temp.
// Running out of temps throws std::length_error.
class RegisterPoolEmitter : public VpuEmitter {
 public:
  RegisterPoolEmitter(std::vector<int> temps, std::vector<int> constant_regs);
  int Emit(const std::string& mnemonic, std::vector<int> srcs) override;
  void EmitTo(int dst, const std::string& mnemonic, std::vector<int> srcs) override;
  int EmitImm(const std::string& mnemonic, int src, int64_t imm) override;
  int F32(double v) override;
  int S32(int64_t v) override;
  void Release(int reg) override;
  void Raw(const std::string& line) { body.push_back(line); }  // registers outside the pools

  std::vector<std::string> prologue, body;

 private:
  int Constant(uint32_t bits);
  std::vector<int> temps_, free_, constant_regs_;
  std::vector<std::pair<uint32_t, int>> constants_;  // bits, register
};

// dst = src `mnemonic` c for a constant c, its register released after (it may be a temp).
inline void WithConstant(VpuEmitter& e, int dst, const std::string& mnemonic, int src, double c) {
  const int k = e.F32(c);
  e.EmitTo(dst, mnemonic, {src, k});
  e.Release(k);
}

// sin(x) or cos(x) in f32: Cody-Waite reduction by pi/2 with k = round-nearest-even(x * 2/pi)
// (exact while |k| < 2^13, |x| < ~12800), then Cephes' minimax polynomials on [-pi/4, pi/4]
// picked and negated by k mod 4. NaN and inf give NaN.
int SineOrCosine(VpuEmitter& e, int x, bool cosine);

// C's fmod(x, y) in f32, the sign of x: q = trunc(|x| / |y|), |x| - q|y| formed exactly with
// Dekker's product, one correction when the rounded quotient was one too large. Exact while
// |x / y| < 2^24 and |y| < 2^115; fmod(x, +-inf) = x, NaN for y = 0 or an infinite x.
int FloatRemainder(VpuEmitter& e, int x, int y);

// pow(x, y) in f32 as exp(y log |x|), negated for a negative x and an odd integral y, NaN
// for a finite negative x and a non-integral y; x^0 = 1^y = 1. Within a few ulps times
// |y log x| of powf (as the constant-base form); pow(-1, +-inf) is NaN here (1 in powf).
int FloatPower(VpuEmitter& e, int x, int y);

// sign(x) in f32: -1, +1, or x itself for +-0 and NaN.
int FloatSign(VpuEmitter& e, int x);

// erf(x) in f32 (vpu_erf_round.cc): XLA's ErfImpl32 rational x P(x^2) / Q(x^2) with x^2
// capped at 16, evaluated as x (P / Q) and clamped to [-1, 1]. Within 6 ulps of erff over
// every f32; +-0, NaN kept, +-inf -> +-1.
int FloatErf(VpuEmitter& e, int x);

// round-nearest-afz in f32, bit for bit: t = trunc(x), plus sign(x) where |x - t| >= 1/2.
int RoundHalfAwayFromZero(VpuEmitter& e, int x);

// is-finite of f32 elements as a pred (1.0 or 0.0): x - x == 0, false for inf and NaN.
int FloatIsFinite(VpuEmitter& e, int x);

// Whether `op` on elements of `type` (s32, u32, or pred held as 1.0 / 0.0) has a form built
// from the 32-bit instructions: IntegerOp emits it, reading the operands `srcs`.
bool HasIntegerForm(hlo::Opcode op, hlo::PrimitiveType type);
int IntegerOp(VpuEmitter& e, hlo::Opcode op, hlo::PrimitiveType type, const std::vector<int>& srcs);

// a / b or a % b on s32 with XLA's semantics (truncation; x / 0 = -1, x % 0 = x,
// INT32_MIN / -1 = INT32_MIN, INT32_MIN % -1 = 0).
int DivideOrRemainderS32(VpuEmitter& e, int a, int b, bool remainder);

// vpu_uint_ops.cc. a / b or a % b on u32 (x / 0 = all ones, x % 0 = x).
int DivideOrRemainderU32(VpuEmitter& e, int a, int b, bool remainder);
// power(x, y) on s32 or u32, wrapping, by square-and-multiply over the exponent's bits; a
// negative s32 exponent gives 1 for x = 1, +-1 for x = -1 and 0 otherwise (as the evaluator).
int IntegerPower(VpuEmitter& e, int x, int y, bool is_signed);
// convert u32 -> f32, rounded to nearest even; f32 (or bf16, pred held as f32) -> u32,
// truncated and saturated to [0, 2^32 - 1], NaN -> 0.
int ConvertU32ToF32(VpuEmitter& e, int x);
int ConvertF32ToU32(VpuEmitter& e, int x);

// compare(a, b) in `direction` (LT, LE, GT, GE, EQ, NE) on s32 elements: 1.0 or 0.0.
int CompareS32(VpuEmitter& e, const std::string& direction, int a, int b);
// The same on u32 elements (order through the signed order of x ^ 0x80000000).
int CompareU32(VpuEmitter& e, const std::string& direction, int a, int b);
// f32 elements' place in IEEE 754's total order as an s32 (type=TOTALORDER): negative
// values' magnitude bits flipped, x ^ ((x >> 31) & 0x7fffffff); its own inverse.
int TotalOrderKey(VpuEmitter& e, int x);

}  // namespace tpusim::lowering
