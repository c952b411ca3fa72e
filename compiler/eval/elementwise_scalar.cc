// Scalar kernels of the elementwise ops: floats computed in their own precision (f32, bf16
// and f16 in float, f64 in double), integers in 64-bit two's complement. Callers round the
// result to the result type.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "compiler/eval/interpreter.h"

namespace tpusim::eval {
namespace {

using hlo::Opcode;

bool IsSignedInt(PrimitiveType t) {
  return t == PrimitiveType::kS8 || t == PrimitiveType::kS16 || t == PrimitiveType::kS32 ||
         t == PrimitiveType::kS64;
}

Status NotDefined(Opcode op, PrimitiveType t) {
  return Status::Error(std::string(hlo::OpcodeName(op)) + " is not defined on " +
                       std::string(hlo::PrimitiveTypeName(t)));
}

template <typename F>
Result<double> UnaryFloat(Opcode op, F x) {
  switch (op) {
    case Opcode::kExp:
      return std::exp(x);
    case Opcode::kExpm1:
      return std::expm1(x);
    case Opcode::kLog:
      return std::log(x);
    case Opcode::kLog1p:
      return std::log1p(x);
    case Opcode::kLogistic:
      return F(1) / (F(1) + std::exp(-x));
    case Opcode::kTanh:
      return std::tanh(x);
    case Opcode::kRsqrt:
      return F(1) / std::sqrt(x);
    case Opcode::kSqrt:
      return std::sqrt(x);
    case Opcode::kNegate:
      return -x;
    case Opcode::kAbs:
      return std::fabs(x);
    case Opcode::kSign:
      return x > 0 ? F(1) : x < 0 ? F(-1) : x;  // keeps +-0 and NaN
    case Opcode::kFloor:
      return std::floor(x);
    case Opcode::kCeil:
      return std::ceil(x);
    case Opcode::kRoundNearestEven:
      return std::nearbyint(x);
    case Opcode::kSin:
      return std::sin(x);
    case Opcode::kCos:
      return std::cos(x);
    case Opcode::kErf:
      return std::erf(x);
    case Opcode::kIsFinite:
      return std::isfinite(x) ? 1.0 : 0.0;
    case Opcode::kRoundNearestAfz:  // half away from zero
      return std::round(x);
    default:
      return Status::Error("");
  }
}

template <typename F>
Result<double> BinaryFloat(Opcode op, F a, F b) {
  switch (op) {
    case Opcode::kAdd:
      return a + b;
    case Opcode::kSubtract:
      return a - b;
    case Opcode::kMultiply:
      return a * b;
    case Opcode::kDivide:
      return a / b;
    case Opcode::kRemainder:
      return std::fmod(a, b);
    case Opcode::kPower:
      return std::pow(a, b);
    case Opcode::kMaximum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
    case Opcode::kMinimum:
      return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
    default:
      return Status::Error("");
  }
}

// Integer ops on 64-bit patterns; the caller wraps the result to its width.
Result<double> BinaryInt(Opcode op, bool is_signed, int bits, double da, double db) {
  uint64_t ua =
      is_signed ? static_cast<uint64_t>(static_cast<int64_t>(da)) : static_cast<uint64_t>(da);
  uint64_t ub =
      is_signed ? static_cast<uint64_t>(static_cast<int64_t>(db)) : static_cast<uint64_t>(db);
  int64_t a = static_cast<int64_t>(ua), b = static_cast<int64_t>(ub);
  // Wraps a 64-bit result to `bits` before it becomes a double (exact below 2^53).
  auto u = [&](uint64_t v) {
    if (bits < 64) {
      uint64_t mask = (uint64_t{1} << bits) - 1;
      v &= mask;
      if (is_signed && (v >> (bits - 1))) v |= ~mask;
    }
    return is_signed ? static_cast<double>(static_cast<int64_t>(v)) : static_cast<double>(v);
  };
  switch (op) {
    case Opcode::kAdd:
      return u(ua + ub);
    case Opcode::kSubtract:
      return u(ua - ub);
    case Opcode::kMultiply:
      return u(ua * ub);
    case Opcode::kAnd:
      return u(ua & ub);
    case Opcode::kOr:
      return u(ua | ub);
    case Opcode::kXor:
      return u(ua ^ ub);
    case Opcode::kShiftLeft:  // XLA: an amount (unsigned) of the bit width or more gives 0
      return ub >= static_cast<uint64_t>(bits) ? 0.0 : u(ua << ub);
    case Opcode::kShiftRightLogical: {
      const uint64_t mask = bits < 64 ? (uint64_t{1} << bits) - 1 : ~uint64_t{0};
      return ub >= static_cast<uint64_t>(bits) ? 0.0 : u((ua & mask) >> ub);
    }
    case Opcode::kShiftRightArithmetic: {  // the sign bit fills (unsigned types too, as XLA)
      int64_t v = a;
      if (bits < 64) {
        const uint64_t mask = (uint64_t{1} << bits) - 1, w = ua & mask;
        v = static_cast<int64_t>(w >> (bits - 1) ? w | ~mask : w);
      }
      return ub >= static_cast<uint64_t>(bits) ? u(static_cast<uint64_t>(v < 0 ? -1 : 0))
                                               : u(static_cast<uint64_t>(v >> ub));
    }
    case Opcode::kMaximum:
      return da > db ? da : db;
    case Opcode::kMinimum:
      return da < db ? da : db;
    case Opcode::kDivide:  // XLA: x / 0 = -1 (all ones), INT_MIN / -1 = INT_MIN
      if (ub == 0) return -1.0;
      if (!is_signed) return static_cast<double>(ua / ub);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return da;
      return static_cast<double>(a / b);
    case Opcode::kRemainder:  // x % 0 = x, INT_MIN % -1 = 0
      if (ub == 0) return da;
      if (!is_signed) return static_cast<double>(ua % ub);
      if (b == -1) return 0.0;
      return static_cast<double>(a % b);
    case Opcode::kPower: {
      if (is_signed && b < 0) return a == 1 ? 1.0 : a == -1 ? (b % 2 ? -1.0 : 1.0) : 0.0;
      uint64_t r = 1, base = ua, e = ub;
      for (; e; e >>= 1, base *= base) {
        if (e & 1) r *= base;
      }
      return u(r);
    }
    default:
      return Status::Error("");
  }
}

// A float's place in IEEE 754's total order as an integer: negative values' magnitude bits
// flipped, so the integers order as -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
int64_t TotalOrderKey(PrimitiveType t, double v) {
  if (t == PrimitiveType::kF64) {
    const int64_t b = std::bit_cast<int64_t>(v);
    return b < 0 ? b ^ INT64_MAX : b;
  }
  const int32_t b = std::bit_cast<int32_t>(static_cast<float>(v));
  return b < 0 ? b ^ INT32_MAX : b;
}

template <typename T>
Result<double> CompareAs(T a, T b, const std::string& dir) {
  if (dir == "EQ") return a == b ? 1.0 : 0.0;
  if (dir == "NE") return a != b ? 1.0 : 0.0;
  if (dir == "LT") return a < b ? 1.0 : 0.0;
  if (dir == "LE") return a <= b ? 1.0 : 0.0;
  if (dir == "GT") return a > b ? 1.0 : 0.0;
  if (dir == "GE") return a >= b ? 1.0 : 0.0;
  return Status::Error("unknown comparison direction '" + dir + "'");
}

Result<double> Compare(PrimitiveType t, double a, double b, const std::string& dir,
                       bool total_order) {
  if (total_order && hlo::IsFloatingType(t) && t != PrimitiveType::kC64)
    return CompareAs(TotalOrderKey(t, a), TotalOrderKey(t, b), dir);
  if (t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16) {
    a = static_cast<float>(a), b = static_cast<float>(b);
  }
  return CompareAs(a, b, dir);
}

}  // namespace

Result<double> UnaryScalar(Opcode op, PrimitiveType type, double x) {
  Result<double> r = Status::Error("");
  if (type == PrimitiveType::kF64) {
    r = UnaryFloat<double>(op, x);
  } else if (hlo::IsFloatingType(type) && type != PrimitiveType::kC64) {
    r = UnaryFloat<float>(op, static_cast<float>(x));
  } else if (op == Opcode::kNot) {
    if (type == PrimitiveType::kPred) {
      r = x != 0 ? 0.0 : 1.0;
    } else if (IsSignedInt(type)) {
      r = static_cast<double>(~static_cast<int64_t>(x));
    } else {
      r = static_cast<double>(~static_cast<uint64_t>(x));
    }
  } else if (op == Opcode::kNegate) {
    r = IsSignedInt(type) ? -x : static_cast<double>(-static_cast<uint64_t>(x));
  } else if (op == Opcode::kAbs) {
    r = std::fabs(x);
  } else if (op == Opcode::kSign) {
    r = x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
  }
  if (!r.ok()) return NotDefined(op, type);
  return r;
}

Result<double> BinaryScalar(Opcode op, PrimitiveType type, double a, double b,
                            const std::string& direction, bool total_order) {
  if (op == Opcode::kCompare) return Compare(type, a, b, direction, total_order);
  Result<double> r = Status::Error("");
  if (type == PrimitiveType::kF64) {
    r = BinaryFloat<double>(op, a, b);
  } else if (hlo::IsFloatingType(type) && type != PrimitiveType::kC64) {
    r = BinaryFloat<float>(op, static_cast<float>(a), static_cast<float>(b));
  } else if (type != PrimitiveType::kC64 && type != PrimitiveType::kTuple) {
    r = BinaryInt(op, IsSignedInt(type), std::max(1, hlo::PrimitiveTypeBits(type)), a, b);
  }
  if (!r.ok()) return NotDefined(op, type);
  return r;
}

}  // namespace tpusim::eval
