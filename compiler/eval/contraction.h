// Numerics shared by dot and convolution (ops_contraction.cc, ops_convolution.cc): which
// operands the MXU sees rounded to bf16, and the accumulation type.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

#include "compiler/eval/interpreter.h"
#include "isa/bf16.h"

namespace tpusim::eval {

// Whether the MXU sees `v` (an operand of `instr`) rounded to bf16: f32 operands at DEFAULT
// precision (one pass); HIGH and HIGHEST keep f32.
inline bool RoundsToBf16(const hlo::HloInstruction& instr, const Value& v) {
  if (v.type() != PrimitiveType::kF32) return false;
  if (const hlo::WordList* p = instr.GetWordList("operand_precision")) {
    for (std::string w : *p) {
      std::transform(w.begin(), w.end(), w.begin(), [](char c) { return std::tolower(c); });
      if (w == "high" || w == "highest") return false;
    }
  }
  return true;
}

// An operand element as the MXU sees it, converted to the accumulation type T.
template <typename T>
inline T Prepared(double x, bool bf16) {
  return static_cast<T>(bf16 ? static_cast<double>(isa::RoundToBf16(static_cast<float>(x))) : x);
}

// Accumulation in float for f32/bf16/f16 results; in double for f64 and integers.
inline bool UseFloat(const hlo::HloInstruction& instr) {
  PrimitiveType t = instr.shape().type;
  return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

// The convolution op (ops_convolution.cc), registered with dot.
Result<Value> Convolution(const hlo::HloInstruction& instr, Operands ops, Interpreter&);

}  // namespace tpusim::eval
