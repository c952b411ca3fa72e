#include "sim/vpu_lanewise.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tpusim::sim {
namespace {

using Vreg = std::array<float, kVregElems>;

template <typename F>
void MapF32(Vreg& d, const Vreg& a, F f) {
  for (size_t i = 0; i < d.size(); ++i) d[i] = f(a[i]);
}
// f on the elements' bit patterns read as s32; the result is a bit pattern, or a 1.0/0.0
// truth value when F returns bool.
template <typename F>
void MapS32(Vreg& d, const Vreg& a, const Vreg& b, F f) {
  for (size_t i = 0; i < d.size(); ++i) {
    const auto r = f(std::bit_cast<int32_t>(a[i]), std::bit_cast<int32_t>(b[i]));
    if constexpr (std::is_same_v<std::remove_const_t<decltype(r)>, bool>)
      d[i] = r ? 1.0f : 0.0f;
    else
      d[i] = std::bit_cast<float>(static_cast<int32_t>(r));
  }
}

}  // namespace

int32_t ConvertF32ToS32(float x) {
  if (std::isnan(x)) return 0;
  if (x <= -0x1p31f) return INT32_MIN;
  if (x >= 0x1p31f) return INT32_MAX;
  return static_cast<int32_t>(x);  // C++ converts toward zero
}

bool ComputeLanewise(isa::Opcode op, Vreg& d, const Vreg& a, const Vreg& b) {
  using isa::Opcode;
  switch (op) {
    case Opcode::kVfloor:
      MapF32(d, a, [](float x) { return std::floor(x); });
      return true;
    case Opcode::kVceil:
      MapF32(d, a, [](float x) { return std::ceil(x); });
      return true;
    case Opcode::kVtrunc:
      MapF32(d, a, [](float x) { return std::trunc(x); });
      return true;
    case Opcode::kVroundEven:  // the default rounding mode is to nearest, ties to even
      MapF32(d, a, [](float x) { return std::nearbyint(x); });
      return true;
    case Opcode::kVcvtS32F32:
      MapF32(d, a, [](float x) { return std::bit_cast<float>(ConvertF32ToS32(x)); });
      return true;
    case Opcode::kVandU32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x & y; });
      return true;
    case Opcode::kVorU32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x | y; });
      return true;
    case Opcode::kVmaxS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x > y ? x : y; });
      return true;
    case Opcode::kVminS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x < y ? x : y; });
      return true;
    case Opcode::kVcmpLtS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x < y; });
      return true;
    case Opcode::kVcmpLeS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x <= y; });
      return true;
    case Opcode::kVcmpEqS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x == y; });
      return true;
    case Opcode::kVcmpNeS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) { return x != y; });
      return true;
    case Opcode::kVshlU32:
      MapS32(d, a, b, [](int32_t x, int32_t y) {
        const uint32_t n = static_cast<uint32_t>(y);
        return static_cast<int32_t>(n >= 32 ? 0u : static_cast<uint32_t>(x) << n);
      });
      return true;
    case Opcode::kVshrlU32:
      MapS32(d, a, b, [](int32_t x, int32_t y) {
        const uint32_t n = static_cast<uint32_t>(y);
        return static_cast<int32_t>(n >= 32 ? 0u : static_cast<uint32_t>(x) >> n);
      });
      return true;
    case Opcode::kVshraS32:
      MapS32(d, a, b, [](int32_t x, int32_t y) {
        const uint32_t n = static_cast<uint32_t>(y);
        return n >= 32 ? (x < 0 ? -1 : 0) : x >> n;  // C++20: >> of a negative is arithmetic
      });
      return true;
    default:
      return false;
  }
}

}  // namespace tpusim::sim
