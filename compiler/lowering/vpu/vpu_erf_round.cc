// erf, round-nearest-afz and is-finite composed from VPU instructions (vpu_math.h).
#include <initializer_list>

#include "compiler/lowering/vpu/vpu_math.h"

namespace tpusim::lowering {
namespace {

// Horner's rule from the highest coefficient down: ((c0 z + c1) z + ...) z + c_last, in the
// order XLA's EvaluatePolynomial rounds it (its first step, 0 z + c0, is c0 exactly).
int Horner(VpuEmitter& e, int z, std::initializer_list<double> coefficients) {
  const double* c = coefficients.begin();
  const int k = e.F32(*c);
  const int acc = e.Emit("vmul", {z, k});
  e.Release(k);
  for (++c; c != coefficients.end(); ++c) {
    WithConstant(e, acc, "vadd", acc, *c);
    if (c + 1 != coefficients.end()) e.EmitTo(acc, "vmul", {acc, z});
  }
  return acc;
}

// XLA's ErfImpl32 (the Eigen rational interpolant of degrees 9 and 12): erf(x) =
// x P(x^2) / Q(x^2).
constexpr std::initializer_list<double> kErfNumerator = {
    0.00022905065861350646, 0.0034082910107109506, 0.050955695062380861, 0.18520832239976145,
    1.128379143519084};
// Q's constant term, 1, is added from the register the final clamp also reads.
constexpr std::initializer_list<double> kErfDenominator = {
    -1.1791602954361697e-7, 0.000023547966471313185, 0.0010179625278914885,
    0.014070470171167667,   0.11098505178285362,     0.49746925110067538};
// x^2 is capped here (|x| <= 4, where erf is 1 in f32): further out Q has a root (|x| near
// 15.4), and an infinite x would give inf / inf.
constexpr double kErfSquareCap = 16.0;

}  // namespace

int FloatErf(VpuEmitter& e, int x) {
  const int one = e.F32(1.0);  // first: a prologue register when one is free
  const int z = e.Emit("vmul", {x, x});
  WithConstant(e, z, "vmin", z, kErfSquareCap);
  const int p = Horner(e, z, kErfNumerator);
  const int q = Horner(e, z, kErfDenominator);
  e.EmitTo(q, "vmul", {q, z});
  e.EmitTo(q, "vadd", {q, one});
  // x (P / Q) rather than (x P) / Q: tiny and denormal x lose no bits in x P.
  e.EmitTo(p, "vdiv", {p, q});
  e.EmitTo(q, "vmul", {x, p});
  // Beyond |x| = 4 (infinities included) the product passes 1, and near 3.7 the rational
  // overshoots by an ulp: both clamp to +-1.
  WithConstant(e, q, "vmax", q, -1.0);
  e.EmitTo(q, "vmin", {q, one});
  for (int reg : {z, p, one}) e.Release(reg);
  return q;
}

int RoundHalfAwayFromZero(VpuEmitter& e, int x) {
  const int t = e.Emit("vtrunc", {x});
  const int d = e.Emit("vsub", {x, t});  // exact, |d| < 1; NaN for inf and NaN
  const int half = e.F32(0.5);
  const int away = e.Emit("vabs", {d});
  e.EmitTo(away, "vcmp.le", {half, away});
  e.Release(half);
  // Where |d| >= 1/2, trunc(2 d) is sign(x); elsewhere t stands (NaN, inf, +-0 kept).
  e.EmitTo(d, "vadd", {d, d});
  e.EmitTo(d, "vtrunc", {d});
  e.EmitTo(d, "vadd", {t, d});
  e.EmitTo(t, "vsel", {away, d, t});
  for (int reg : {d, away}) e.Release(reg);
  return t;
}

int FloatIsFinite(VpuEmitter& e, int x) {
  const int zero = e.S32(0);  // the bits of +0.0
  const int r = e.Emit("vsub", {x, x});
  e.EmitTo(r, "vcmp.eq", {r, zero});
  e.Release(zero);
  return r;
}

}  // namespace tpusim::lowering
