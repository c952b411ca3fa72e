// u32 divide and remainder, integer power and the u32 <-> float converts, from the VPU's
// 32-bit instructions (vpu_math.h).
#include <cstdint>

#include "compiler/lowering/vpu/vpu_math.h"

namespace tpusim::lowering {

// b >= 2^31: the quotient is 0 or 1. Otherwise the s32 division of a >> 1 (non-negative)
// by b, doubled, is the quotient or one below it (Hacker's Delight 9-3): one unsigned
// compare of the remainder against b finishes. Unsigned order: the signed order of
// x ^ 0x80000000.
int DivideOrRemainderU32(VpuEmitter& e, int a, int b, bool remainder) {
  const int zero = e.S32(0), one = e.S32(1), sign_bit = e.S32(INT32_MIN);
  const int half = e.EmitImm("vshr.u32", a, 1);
  const int q = DivideOrRemainderS32(e, half, b, /*remainder=*/false);
  e.Release(half);
  e.EmitTo(q, "vadd.s32", {q, q});
  const int r = e.Emit("vmul.u32", {q, b});
  e.EmitTo(r, "vsub.s32", {a, r});
  const int biased_b = e.Emit("vxor.u32", {b, sign_bit});
  const int t = e.Emit("vxor.u32", {r, sign_bit});
  e.EmitTo(t, "vcmp.le.s32", {biased_b, t});  // r >= b
  const int scratch = e.Emit("vadd.s32", {q, one});
  e.EmitTo(q, "vsel", {t, scratch, q});
  e.EmitTo(scratch, "vsub.s32", {r, b});
  e.EmitTo(r, "vsel", {t, scratch, r});
  // b >= 2^31: a >= b gives 1 and a - b.
  e.EmitTo(t, "vxor.u32", {a, sign_bit});
  e.EmitTo(t, "vcmp.le.s32", {biased_b, t});
  const int big = e.Emit("vcmp.lt.s32", {b, zero});
  const int result = remainder ? r : q;
  if (remainder) {
    e.EmitTo(scratch, "vsub.s32", {a, b});
    e.EmitTo(scratch, "vsel", {t, scratch, a});
  } else {
    e.EmitTo(scratch, "vsel", {t, one, zero});
  }
  e.EmitTo(result, "vsel", {big, scratch, result});
  // b = 0: all ones, or a.
  e.EmitTo(t, "vcmp.eq.s32", {b, zero});
  const int by_zero = remainder ? a : e.S32(-1);
  e.EmitTo(result, "vsel", {t, by_zero, result});
  for (int reg : {zero, one, sign_bit, remainder ? q : r, biased_b, t, scratch, big})
    e.Release(reg);
  if (!remainder) e.Release(by_zero);
  return result;
}

int IntegerPower(VpuEmitter& e, int x, int y, bool is_signed) {
  const int zero = e.S32(0), one = e.S32(1);
  const int acc = e.Emit("vor.u32", {one, one});
  const int base = e.Emit("vor.u32", {x, x});
  const int mask = e.Emit("vor.u32", {one, one});
  const int bits = is_signed ? 31 : 32;  // a negative s32 exponent is handled below
  for (int k = 0; k < bits; ++k) {
    const int bit = e.Emit("vand.u32", {y, mask});
    e.EmitTo(bit, "vcmp.ne.s32", {bit, zero});
    const int product = e.Emit("vmul.u32", {acc, base});
    e.EmitTo(acc, "vsel", {bit, product, acc});
    e.Release(product);
    e.Release(bit);
    if (k + 1 == bits) break;
    e.EmitTo(base, "vmul.u32", {base, base});
    e.EmitTo(mask, "vadd.s32", {mask, mask});
  }
  e.Release(base);
  e.Release(mask);
  if (is_signed) {
    const int minus_one = e.S32(-1);
    const int odd = e.Emit("vand.u32", {y, one});
    e.EmitTo(odd, "vcmp.ne.s32", {odd, zero});
    const int r = e.Emit("vsel", {odd, minus_one, one});  // (-1)^y
    const int test = e.Emit("vcmp.eq.s32", {x, minus_one});
    e.EmitTo(r, "vsel", {test, r, zero});
    e.EmitTo(test, "vcmp.eq.s32", {x, one});
    e.EmitTo(r, "vsel", {test, one, r});
    e.EmitTo(test, "vcmp.lt.s32", {y, zero});
    e.EmitTo(acc, "vsel", {test, r, acc});
    for (int reg : {minus_one, odd, r, test}) e.Release(reg);
  }
  e.Release(zero);
  e.Release(one);
  return acc;
}

// Below 2^31 the s32 convert is the u32 one. From 2^31 on: (x >> 1) | (x & 1) keeps the
// bit below the halved value's last as a sticky bit, so its rounding to 24 bits, doubled
// (exactly), is x's rounding.
int ConvertU32ToF32(VpuEmitter& e, int x) {
  const int zero = e.S32(0), one = e.S32(1);
  const int half = e.EmitImm("vshr.u32", x, 1);
  const int low = e.Emit("vand.u32", {x, one});
  e.EmitTo(half, "vor.u32", {half, low});
  e.EmitTo(half, "vcvt.f32.s32", {half});
  e.EmitTo(half, "vadd", {half, half});
  e.EmitTo(low, "vcvt.f32.s32", {x});
  const int big = e.Emit("vcmp.lt.s32", {x, zero});
  e.EmitTo(half, "vsel", {big, half, low});
  for (int reg : {zero, one, low, big}) e.Release(reg);
  return half;
}

// Below 2^31 the s32 convert (toward zero; negatives clamp to 0). From 2^31 on: x - 2^31
// (exact: x is a multiple of 256 there) converted, its top bit set; from 2^32 the s32
// convert saturates at 2^31 - 1, which with the top bit set is 2^32 - 1.
int ConvertF32ToU32(VpuEmitter& e, int x) {
  const int zero = e.S32(0), two31 = e.F32(2147483648.0), sign_bit = e.S32(INT32_MIN);
  const int low = e.Emit("vcvt.s32.f32", {x});
  e.EmitTo(low, "vmax.s32", {low, zero});
  const int high = e.Emit("vsub", {x, two31});
  e.EmitTo(high, "vcvt.s32.f32", {high});
  e.EmitTo(high, "vxor.u32", {high, sign_bit});
  const int big = e.Emit("vcmp.le", {two31, x});
  e.EmitTo(low, "vsel", {big, high, low});
  for (int reg : {zero, two31, sign_bit, high, big}) e.Release(reg);
  return low;
}

int TotalOrderKey(VpuEmitter& e, int x) {
  const int shift = e.S32(31), magnitude = e.S32(INT32_MAX);
  const int key = e.Emit("vshra.s32", {x, shift});
  e.EmitTo(key, "vand.u32", {key, magnitude});
  e.EmitTo(key, "vxor.u32", {key, x});
  e.Release(shift);
  e.Release(magnitude);
  return key;
}

}  // namespace tpusim::lowering
