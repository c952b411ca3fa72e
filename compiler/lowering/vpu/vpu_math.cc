#include "compiler/lowering/vpu/vpu_math.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>

namespace tpusim::lowering {
namespace {

// A fresh temp = src `mnemonic` c for a constant c.
int EmitWithConstant(VpuEmitter& e, const std::string& mnemonic, int src, double c) {
  const int k = e.F32(c);
  const int d = e.Emit(mnemonic, {src, k});
  e.Release(k);
  return d;
}

// The Horner steps acc = acc * z + c for each c, starting from acc = z * coefficients[0].
int Polynomial(VpuEmitter& e, int z, std::initializer_list<double> coefficients) {
  int acc = -1;
  for (double c : coefficients) {
    if (acc < 0) {
      acc = EmitWithConstant(e, "vmul", z, c);
      continue;
    }
    WithConstant(e, acc, "vadd", acc, c);
    e.EmitTo(acc, "vmul", {acc, z});
  }
  return acc;
}

// pi/2 in three parts (Cephes' DP1..DP3 for pi/4, doubled): the first has 8 significant bits
// and the second 11, so k times either is exact for |k| < 2^13.
constexpr double kTwoOverPi = 0.63661977236758134308;
constexpr double kPiOver2Hi = 1.5703125, kPiOver2Mid = 4.837512969970703125e-4,
                 kPiOver2Lo = 7.54978995489188216e-8;

}  // namespace

RegisterPoolEmitter::RegisterPoolEmitter(std::vector<int> temps, std::vector<int> constant_regs)
    : temps_(temps),
      free_(temps.rbegin(), temps.rend()),
      constant_regs_(constant_regs.rbegin(), constant_regs.rend()) {}

int RegisterPoolEmitter::Emit(const std::string& mnemonic, std::vector<int> srcs) {
  if (free_.empty()) throw std::length_error("no free VPU temp for " + mnemonic);
  const int d = free_.back();
  free_.pop_back();
  EmitTo(d, mnemonic, std::move(srcs));
  return d;
}

void RegisterPoolEmitter::EmitTo(int dst, const std::string& mnemonic, std::vector<int> srcs) {
  std::string line = mnemonic + " v" + std::to_string(dst);
  for (int s : srcs) line += ", v" + std::to_string(s);
  body.push_back(line);
}

int RegisterPoolEmitter::EmitImm(const std::string& mnemonic, int src, int64_t imm) {
  if (free_.empty()) throw std::length_error("no free VPU temp for " + mnemonic);
  const int d = free_.back();
  free_.pop_back();
  body.push_back(mnemonic + " v" + std::to_string(d) + ", v" + std::to_string(src) + ", " +
                 std::to_string(imm));
  return d;
}

int RegisterPoolEmitter::F32(double v) {
  return Constant(std::bit_cast<uint32_t>(static_cast<float>(v)));
}
int RegisterPoolEmitter::S32(int64_t v) { return Constant(static_cast<uint32_t>(v)); }

int RegisterPoolEmitter::Constant(uint32_t bits) {
  for (auto [b, r] : constants_)
    if (b == bits) return r;
  char text[48];
  if (!constant_regs_.empty()) {
    const int r = constant_regs_.back();
    constant_regs_.pop_back();
    std::snprintf(text, sizeof text, "vmovi v%d, f32:0x%08x", r, bits);
    prologue.push_back(text);
    constants_.push_back({bits, r});
    return r;
  }
  if (free_.empty()) throw std::length_error("no free VPU temp for a constant");
  const int r = free_.back();
  free_.pop_back();
  std::snprintf(text, sizeof text, "vmovi v%d, f32:0x%08x", r, bits);
  body.push_back(text);
  return r;
}

void RegisterPoolEmitter::Release(int reg) {  // temps only: the prologue's constants stay
  if (std::count(temps_.begin(), temps_.end(), reg)) free_.push_back(reg);
}

int SineOrCosine(VpuEmitter& e, int x, bool cosine) {
  const int k = EmitWithConstant(e, "vmul", x, kTwoOverPi);
  e.EmitTo(k, "vround.even", {k});
  const int r = EmitWithConstant(e, "vmul", k, kPiOver2Hi);
  e.EmitTo(r, "vsub", {x, r});
  const int t = EmitWithConstant(e, "vmul", k, kPiOver2Mid);
  e.EmitTo(r, "vsub", {r, t});
  WithConstant(e, t, "vmul", k, kPiOver2Lo);
  e.EmitTo(r, "vsub", {r, t});
  const int z = e.Emit("vmul", {r, r});
  // sin r = r + r z (s1 + z (s2 + z s3)) on [-pi/4, pi/4] (Cephes sinf).
  const int s = Polynomial(e, z, {-1.9515295891e-4, 8.3321608736e-3});
  WithConstant(e, s, "vadd", s, -1.6666654611e-1);
  e.EmitTo(s, "vmul", {s, z});
  e.EmitTo(s, "vmul", {s, r});
  e.EmitTo(s, "vadd", {s, r});
  // cos r = 1 - z / 2 + z^2 (c1 + z (c2 + z c3)) (Cephes cosf).
  const int c = Polynomial(e, z, {2.443315711809948e-5, -1.388731625493765e-3});
  WithConstant(e, c, "vadd", c, 4.166664568298827e-2);
  e.EmitTo(c, "vmul", {c, z});
  e.EmitTo(c, "vmul", {c, z});
  WithConstant(e, t, "vmul", z, 0.5);
  e.EmitTo(c, "vsub", {c, t});
  WithConstant(e, c, "vadd", c, 1.0);
  // Quadrant k mod 4 (cos x = sin(x + pi/2)): odd ones take the cosine polynomial, the
  // upper two are negated.
  if (cosine) WithConstant(e, k, "vadd", k, 1.0);
  e.EmitTo(k, "vcvt.s32.f32", {k});
  const int zero = e.S32(0), one = e.S32(1), two = e.S32(2);
  e.EmitTo(t, "vand.u32", {k, one});
  e.EmitTo(t, "vcmp.ne.s32", {t, zero});
  const int result = e.Emit("vsel", {t, c, s});
  e.EmitTo(t, "vand.u32", {k, two});
  e.EmitTo(t, "vcmp.ne.s32", {t, zero});
  e.EmitTo(c, "vneg", {result});
  e.EmitTo(result, "vsel", {t, c, result});
  if (!cosine) {  // sin(+-0) = +-0 (the reduction's x - 0 is +0)
    e.EmitTo(t, "vcmp.eq", {x, zero});
    e.EmitTo(result, "vsel", {t, x, result});
  }
  for (int reg : {k, r, t, z, s, c, zero, one, two}) e.Release(reg);
  return result;
}

int FloatRemainder(VpuEmitter& e, int x, int y) {
  const int ax = e.Emit("vabs", {x}), ay = e.Emit("vabs", {y});
  const int q = e.Emit("vdiv", {ax, ay});
  e.EmitTo(q, "vtrunc", {q});
  // Veltkamp's split of v into 12-bit halves hi + lo (4097 = 2^12 + 1).
  auto split = [&](int v, int& hi, int& lo) {
    hi = EmitWithConstant(e, "vmul", v, 4097.0);
    lo = e.Emit("vsub", {hi, v});
    e.EmitTo(hi, "vsub", {hi, lo});
    e.EmitTo(lo, "vsub", {v, hi});
  };
  int qh, ql, yh, yl;
  split(q, qh, ql);
  split(ay, yh, yl);
  // Dekker: q |y| = p + err exactly, so |x| - q |y| = (|x| - p) - err, where |x| - p is
  // exact (p is within a factor 2 of |x|) and the result is representable.
  const int p = e.Emit("vmul", {q, ay});
  const int err = e.Emit("vmul", {qh, yh});
  e.EmitTo(err, "vsub", {err, p});
  const int t = e.Emit("vmul", {qh, yl});
  e.EmitTo(err, "vadd", {err, t});
  e.EmitTo(t, "vmul", {ql, yh});
  e.EmitTo(err, "vadd", {err, t});
  e.EmitTo(t, "vmul", {ql, yl});
  e.EmitTo(err, "vadd", {err, t});
  const int r = e.Emit("vsub", {ax, p});
  e.EmitTo(r, "vsub", {r, err});
  // A quotient rounded up to the next integer leaves r in (-|y|, 0): one |y| back.
  const int zero = e.S32(0);  // +0.0 and s32 0 share their bits
  e.EmitTo(t, "vcmp.lt", {r, zero});
  e.EmitTo(p, "vadd", {r, ay});
  e.EmitTo(r, "vsel", {t, p, r});
  // The sign of x, -0 included (its sign bit makes it a negative s32).
  e.EmitTo(t, "vcmp.lt.s32", {x, zero});
  e.EmitTo(p, "vneg", {r});
  e.EmitTo(r, "vsel", {t, p, r});
  // |x| < |y| (also y = +-inf): x itself.
  e.EmitTo(t, "vcmp.lt", {ax, ay});
  e.EmitTo(r, "vsel", {t, x, r});
  for (int reg : {ax, ay, q, qh, ql, yh, yl, p, err, t, zero}) e.Release(reg);
  return r;
}

int FloatPower(VpuEmitter& e, int x, int y) {
  const int ax = e.Emit("vabs", {x});
  const int m = e.Emit("vlog", {ax});
  e.EmitTo(m, "vmul", {m, y});
  e.EmitTo(m, "vexp", {m});  // |x|^y
  // y an integer, and an odd one (y / 2 is not; every f32 from 2^24 up is even).
  const int integral = e.Emit("vtrunc", {y});
  e.EmitTo(integral, "vcmp.eq", {integral, y});
  const int half = e.F32(0.5);
  const int odd = e.Emit("vmul", {y, half});
  e.Release(half);
  const int t = e.Emit("vtrunc", {odd});
  e.EmitTo(odd, "vcmp.ne", {t, odd});
  e.EmitTo(odd, "vmin", {odd, integral});
  // A negative x (-0 included: its sign bit) to an odd power: -|x|^y.
  const int zero = e.S32(0);
  e.EmitTo(t, "vcmp.lt.s32", {x, zero});
  e.EmitTo(t, "vmin", {t, odd});
  e.EmitTo(odd, "vneg", {m});
  e.EmitTo(m, "vsel", {t, odd, m});
  // A finite negative x to a non-integral power: NaN.
  const int inf = e.S32(0x7f800000), nan = e.S32(0x7fc00000);
  e.EmitTo(t, "vcmp.lt", {x, zero});
  e.EmitTo(integral, "vcmp.eq", {integral, zero});
  e.EmitTo(t, "vmin", {t, integral});
  e.EmitTo(integral, "vcmp.ne", {ax, inf});
  e.EmitTo(t, "vmin", {t, integral});
  e.EmitTo(m, "vsel", {t, nan, m});
  // x^0 = 1^y = 1, even for a NaN x or y.
  const int one = e.F32(1.0);
  e.EmitTo(t, "vcmp.eq", {y, zero});
  e.EmitTo(integral, "vcmp.eq", {x, one});
  e.EmitTo(t, "vmax", {t, integral});
  e.EmitTo(m, "vsel", {t, one, m});
  for (int reg : {ax, integral, odd, t, zero, inf, nan, one}) e.Release(reg);
  return m;
}

int FloatSign(VpuEmitter& e, int x) {
  const int zero = e.S32(0), one = e.F32(1.0), minus_one = e.F32(-1.0);
  const int t = e.Emit("vcmp.lt", {zero, x});
  const int r = e.Emit("vsel", {t, one, x});
  e.EmitTo(t, "vcmp.lt", {x, zero});
  e.EmitTo(r, "vsel", {t, minus_one, r});
  for (int reg : {zero, one, minus_one, t}) e.Release(reg);
  return r;
}

}  // namespace tpusim::lowering
