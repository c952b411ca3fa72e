#include "compiler/eval/value.h"

#include "compiler/eval/f16.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "isa/bf16.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace tpusim::eval {
namespace {

int64_t WrapSigned(double x, int bits) {
  if (std::isnan(x)) return 0;
  double t = std::fmod(std::trunc(x), 0x1p64);  // exact, |t| < 2^64
  uint64_t u;
  if (t >= 0x1p63) {
    u = static_cast<uint64_t>(t);
  } else if (t >= -0x1p63) {
    u = static_cast<uint64_t>(static_cast<int64_t>(t));
  } else {
    u = static_cast<uint64_t>(static_cast<int64_t>(t + 0x1p64));  // exact: t is a multiple of 2^11
  }
  if (bits == 64) return static_cast<int64_t>(u);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  u &= mask;
  if (u >> (bits - 1)) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

bool IsSigned(PrimitiveType t) {
  return t == PrimitiveType::kS8 || t == PrimitiveType::kS16 || t == PrimitiveType::kS32 ||
         t == PrimitiveType::kS64;
}

}  // namespace

double RoundTo(PrimitiveType t, double x) {
  switch (t) {
    case PrimitiveType::kPred:
      return x != 0 ? 1 : 0;
    case PrimitiveType::kF32:
      return static_cast<float>(x);
    case PrimitiveType::kBF16:
      return isa::RoundToBf16(static_cast<float>(x));
    case PrimitiveType::kF16:
      return F16BitsToF32(F32ToF16Bits(static_cast<float>(x)));
    case PrimitiveType::kF64:
    case PrimitiveType::kC64:
    case PrimitiveType::kTuple:
      return x;
    default:
      break;
  }
  int bits = hlo::PrimitiveTypeBits(t);
  int64_t w = WrapSigned(x, bits);
  if (IsSigned(t)) return static_cast<double>(w);
  uint64_t u = static_cast<uint64_t>(w);
  if (bits < 64) u &= (uint64_t{1} << bits) - 1;
  return static_cast<double>(u);
}

double ConvertTo(PrimitiveType from, PrimitiveType to, double x) {
  if (hlo::IsFloatingType(from) && hlo::IsIntegralType(to)) {
    if (std::isnan(x)) return 0;
    int bits = hlo::PrimitiveTypeBits(to);
    double lo = IsSigned(to) ? -std::ldexp(1.0, bits - 1) : 0;
    double hi = IsSigned(to) ? std::ldexp(1.0, bits - 1) - 1 : std::ldexp(1.0, bits) - 1;
    return RoundTo(to, std::clamp(std::trunc(x), lo, hi));
  }
  return RoundTo(to, x);
}

uint64_t ToBits(PrimitiveType t, double x) {
  switch (t) {
    case PrimitiveType::kF32:
      return std::bit_cast<uint32_t>(static_cast<float>(x));
    case PrimitiveType::kF64:
      return std::bit_cast<uint64_t>(x);
    case PrimitiveType::kBF16:
      return isa::F32ToBf16(static_cast<float>(x));
    case PrimitiveType::kF16:
      return F32ToF16Bits(static_cast<float>(x));
    default: {
      int bits = hlo::PrimitiveTypeBits(t);
      uint64_t u = static_cast<uint64_t>(WrapSigned(x, 64));
      return bits == 64 ? u : u & ((uint64_t{1} << bits) - 1);
    }
  }
}

double FromBits(PrimitiveType t, uint64_t bits) {
  switch (t) {
    case PrimitiveType::kF32:
      return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case PrimitiveType::kF64:
      return std::bit_cast<double>(bits);
    case PrimitiveType::kBF16:
      return isa::Bf16ToF32(static_cast<uint16_t>(bits));
    case PrimitiveType::kF16:
      return F16BitsToF32(static_cast<uint16_t>(bits));
    default:
      if (IsSigned(t)) return RoundTo(t, static_cast<double>(static_cast<int64_t>(bits)));
      return static_cast<double>(bits);
  }
}

std::vector<int64_t> Strides(std::span<const int64_t> dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

bool NextIndex(std::vector<int64_t>& index, std::span<const int64_t> dims) {
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    if (++index[i] < dims[i]) return true;
    index[i] = 0;
  }
  return false;
}

int64_t Linear(std::span<const int64_t> index, std::span<const int64_t> strides) {
  int64_t l = 0;
  for (size_t i = 0; i < index.size(); ++i) l += index[i] * strides[i];
  return l;
}

namespace {

// Asks Linux to back a large fresh allocation with transparent huge pages: a training step's
// arrays are hundreds of MB each, and faulting them in 4 KiB at a time dominated the
// evaluator's host time. Only advice; the contents are unaffected.
void AdviseHugePages(void* p, size_t bytes) {
#ifdef __linux__
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 4 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace

Value Value::Zeros(const hlo::Shape& shape) {
  Value v;
  v.shape = shape;
  v.shape.layout.reset();
  if (shape.IsTuple()) {
    v.shape.tuple_shapes.clear();
    for (const hlo::Shape& s : shape.tuple_shapes) {
      v.elements.push_back(Zeros(s));
      v.shape.tuple_shapes.push_back(v.elements.back().shape);
    }
  } else {
    const auto n = static_cast<size_t>(shape.ElementCount());
    v.data.reserve(n);
    AdviseHugePages(v.data.data(), n * sizeof(double));
    v.data.assign(n, 0.0);
  }
  return v;
}

Value Value::Scalar(PrimitiveType t, double x) { return FromVector(t, {}, {x}); }

Value Value::FromVector(const hlo::Shape& shape, std::vector<double> values) {
  if (shape.IsTuple() || static_cast<int64_t>(values.size()) != shape.ElementCount()) {
    throw std::invalid_argument("Value::FromVector: " + std::to_string(values.size()) +
                                " values for " + shape.ToString(false));
  }
  Value v;
  v.shape = shape;
  v.shape.layout.reset();
  for (double& x : values) x = RoundTo(shape.type, x);
  v.data = std::move(values);
  return v;
}

Value Value::FromVector(PrimitiveType t, std::vector<int64_t> dims, std::vector<double> values) {
  return FromVector(hlo::Shape::Array(t, std::move(dims)), std::move(values));
}

Value Value::Tuple(std::vector<Value> elements) {
  Value v;
  std::vector<hlo::Shape> shapes;
  for (const Value& e : elements) shapes.push_back(e.shape);
  v.shape = hlo::Shape::Tuple(std::move(shapes));
  v.elements = std::move(elements);
  return v;
}

Value Value::Random(const hlo::Shape& shape, uint64_t seed) {
  if (shape.IsTuple()) {
    std::vector<Value> elements;
    for (size_t i = 0; i < shape.tuple_shapes.size(); ++i) {
      elements.push_back(Random(shape.tuple_shapes[i], seed * 1000003 + i + 1));
    }
    return Tuple(std::move(elements));
  }
  Value v = Zeros(shape);
  uint64_t state = seed;
  for (double& x : v.data) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);  // splitmix64
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    if (hlo::IsFloatingType(shape.type)) {
      x = RoundTo(shape.type, static_cast<double>(z >> 11) * 0x1p-52 - 1.0);
    } else {
      x = RoundTo(shape.type,
                  static_cast<double>(shape.type == PrimitiveType::kPred ? z >> 63 : z >> 60));
    }
  }
  return v;
}

double Value::at(std::span<const int64_t> index) const {
  return data.at(static_cast<size_t>(Linear(index, Strides(shape.dims))));
}

std::string Value::ToString() const {
  std::ostringstream os;
  if (IsTuple()) {
    os << "(";
    for (size_t i = 0; i < elements.size(); ++i) os << (i ? ", " : "") << elements[i].ToString();
    os << ")";
    return os.str();
  }
  os << shape.ToString(false) << "{";
  for (size_t i = 0; i < data.size(); ++i) os << (i ? ", " : "") << data[i];
  os << "}";
  return os.str();
}

}  // namespace tpusim::eval
