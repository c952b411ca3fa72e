// The blocked dot and convolution (contraction_kernel.h) against the plain definitions they
// replaced, bit for bit: hundreds of seeded random cases over dim_labels, padding, stride,
// dilation, reversal, feature and batch groups, precision and element types.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <tuple>

#include "compiler/eval/contraction.h"
#include "compiler/eval/window.h"
#include "compiler/hlo/parser.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::PrimitiveType;

// The former evaluator, kept as the definition: per output element, the list of contracted
// (lhs, rhs) offsets, summed in order in the accumulation type.
template <typename Acc>
double SumPairs(const std::vector<double>& l, const std::vector<double>& r,
                const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  Acc acc = 0;
  for (auto [lo, ro] : pairs) acc += static_cast<Acc>(l[lo]) * static_cast<Acc>(r[ro]);
  return acc;
}

std::vector<double> PreparedAll(const HloInstruction& instr, const Value& v) {
  std::vector<double> out;
  for (double x : v.data) out.push_back(Prepared<double>(x, RoundsToBf16(instr, v)));
  return out;
}

Value ReferenceConvolution(const HloInstruction& instr, const Value& lhs, const Value& rhs) {
  const hlo::ConvDims& dn = *instr.conv_dims();
  const size_t nsp = dn.input_spatial.size();
  hlo::Window win = instr.window() ? *instr.window() : hlo::Window{};
  win.dims.resize(nsp);
  for (size_t s = 0; s < nsp; ++s) win.dims[s].size = rhs.dims()[dn.kernel_spatial[s]];
  const int64_t fgc = instr.GetInt("feature_group_count").value_or(1);
  const int64_t bgc = instr.GetInt("batch_group_count").value_or(1);
  const int64_t in_f = rhs.dims()[dn.kernel_input_feature];
  const int64_t out_f = rhs.dims()[dn.kernel_output_feature];
  const int64_t out_batch = instr.shape().dims[dn.output_batch];
  std::vector<int64_t> ls = Strides(lhs.dims()), rs = Strides(rhs.dims()), in_sp(nsp), out_sp(nsp);
  for (size_t s = 0; s < nsp; ++s) in_sp[s] = lhs.dims()[dn.input_spatial[s]];
  const std::vector<double> l = PreparedAll(instr, lhs), r = PreparedAll(instr, rhs);
  Value out = Value::Zeros(instr.shape());
  std::vector<int64_t> idx(out.shape.rank(), 0);
  for (int64_t o = 0; o < out.size(); ++o, NextIndex(idx, out.dims())) {
    const int64_t f = idx[dn.output_feature];
    const int64_t fg = f / (out_f / fgc), bg = f / (out_f / bgc);
    const int64_t lbase = (idx[dn.output_batch] + bg * out_batch) * ls[dn.input_batch] +
                          fg * in_f * ls[dn.input_feature];
    for (size_t s = 0; s < nsp; ++s) out_sp[s] = idx[dn.output_spatial[s]];
    std::vector<std::pair<int64_t, int64_t>> pairs;
    ForEachWindowInput(win, in_sp, out_sp, [&](const auto& k, const auto& in) {
      int64_t lo = lbase, ro = f * rs[dn.kernel_output_feature];
      for (size_t s = 0; s < nsp; ++s) {
        const int64_t kk = win.dims[s].reversal ? win.dims[s].size - 1 - k[s] : k[s];
        lo += in[s] * ls[dn.input_spatial[s]], ro += kk * rs[dn.kernel_spatial[s]];
      }
      for (int64_t i = 0; i < in_f; ++i)
        pairs.push_back({lo + i * ls[dn.input_feature], ro + i * rs[dn.kernel_input_feature]});
    });
    const double v = UseFloat(instr) ? SumPairs<float>(l, r, pairs) : SumPairs<double>(l, r, pairs);
    out.data[o] = RoundTo(out.type(), v);
  }
  return out;
}

// Per output (batch..., lhs free..., rhs free...): the contracted offsets in row-major order of
// the lhs contracting dims.
Value ReferenceDot(const HloInstruction& instr, const Value& lhs, const Value& rhs) {
  auto list = [&](const char* key) { return *instr.GetIntList(key); };
  const std::vector<int64_t> lb = list("lhs_batch_dims"), rb = list("rhs_batch_dims");
  const std::vector<int64_t> lc = list("lhs_contracting_dims"), rc = list("rhs_contracting_dims");
  auto free_dims = [](int64_t rank, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> f;
    for (int64_t d = 0; d < rank; ++d)
      if (std::count(a.begin(), a.end(), d) + std::count(b.begin(), b.end(), d) == 0)
        f.push_back(d);
    return f;
  };
  const std::vector<int64_t> lf = free_dims(lhs.shape.rank(), lb, lc),
                             rf = free_dims(rhs.shape.rank(), rb, rc);
  const std::vector<double> l = PreparedAll(instr, lhs), r = PreparedAll(instr, rhs);
  std::vector<int64_t> ls = Strides(lhs.dims()), rs = Strides(rhs.dims()), cdims;
  for (int64_t d : lc) cdims.push_back(lhs.dims()[d]);
  Value out = Value::Zeros(instr.shape());
  std::vector<int64_t> idx(out.shape.rank(), 0);
  for (int64_t o = 0; o < out.size(); ++o, NextIndex(idx, out.dims())) {
    int64_t lbase = 0, rbase = 0;
    size_t x = 0;
    for (size_t j = 0; j < lb.size(); ++j, ++x)
      lbase += idx[x] * ls[lb[j]], rbase += idx[x] * rs[rb[j]];
    for (int64_t d : lf) lbase += idx[x++] * ls[d];
    for (int64_t d : rf) rbase += idx[x++] * rs[d];
    std::vector<std::pair<int64_t, int64_t>> pairs;
    std::vector<int64_t> k(cdims.size(), 0);
    int64_t n = 1;
    for (int64_t c : cdims) n *= c;
    for (int64_t i = 0; i < n; ++i, NextIndex(k, cdims)) {
      int64_t lo = lbase, ro = rbase;
      for (size_t j = 0; j < k.size(); ++j) lo += k[j] * ls[lc[j]], ro += k[j] * rs[rc[j]];
      pairs.push_back({lo, ro});
    }
    const double v = UseFloat(instr) ? SumPairs<float>(l, r, pairs) : SumPairs<double>(l, r, pairs);
    out.data[o] = RoundTo(out.type(), v);
  }
  return out;
}

// Every element equal to the last bit (NaNs: both NaN).
void ExpectBitIdentical(const Value& got, const Value& want, const std::string& what) {
  ASSERT_EQ(got.data.size(), want.data.size()) << what;
  for (size_t i = 0; i < got.data.size(); ++i) {
    if (std::isnan(got.data[i]) && std::isnan(want.data[i])) continue;
    ASSERT_EQ(std::bit_cast<uint64_t>(got.data[i]), std::bit_cast<uint64_t>(want.data[i]))
        << what << "\nelement " << i << ": " << got.data[i] << " vs " << want.data[i];
  }
}

// Random contents with some signed zeros, infinities, subnormal-scale and huge values.
Value Contents(PrimitiveType t, std::vector<int64_t> dims, std::mt19937_64& rng) {
  Value v = Value::Random(hlo::Shape::Array(t, std::move(dims)), rng());
  if (!hlo::IsFloatingType(t)) return v;
  const double special[] = {0.0, -0.0, INFINITY, 1e-39, -3e38, 1.5e-45};
  for (double& x : v.data)
    if (rng() % 50 == 0) x = RoundTo(t, special[rng() % 6]);
  return v;
}

struct TypeCase {
  const char* out;
  const char* in;
  PrimitiveType in_type;
  const char* precision;
};
const TypeCase kTypes[] = {
    {"f32", "f32", PrimitiveType::kF32, ""},
    {"f32", "f32", PrimitiveType::kF32, ", operand_precision={highest,highest}"},
    {"f32", "f32", PrimitiveType::kF32, ", operand_precision={default,high}"},
    {"bf16", "bf16", PrimitiveType::kBF16, ""},
    {"f32", "bf16", PrimitiveType::kBF16, ""},
    {"f64", "f64", PrimitiveType::kF64, ""},
    {"s32", "s32", PrimitiveType::kS32, ""}};

std::string DimsText(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return "[" + s + "]";
}

// Evaluates the module's root through the evaluator and through `reference`.
template <typename Ref>
void Compare(const std::string& text, const std::vector<Value>& args, Ref reference) {
  Result<hlo::HloModule> m = hlo::ParseHlo(text);
  ASSERT_TRUE(m.ok()) << m.status().message() << "\n" << text;
  Result<std::vector<Value>> got = Evaluate(*m, args);
  ASSERT_TRUE(got.ok()) << got.status().message() << "\n" << text;
  ExpectBitIdentical(got->at(0), reference(*m->entry()->root(), args[0], args[1]), text);
}

TEST(EvalContractionReference, ConvolutionMatchesPlainLoopBitForBit) {
  std::mt19937_64 rng(20261126);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % (hi - lo + 1));
  };
  for (int c = 0; c < 400; ++c) {
    const size_t nsp = static_cast<size_t>(pick(1, 3));
    const TypeCase& t = kTypes[rng() % std::size(kTypes)];
    const int64_t fgc = pick(0, 2) == 0 ? pick(2, 3) : 1, bgc = fgc == 1 && pick(0, 3) == 0 ? 2 : 1;
    const int64_t in_f = pick(1, 5), out_f = fgc * bgc * pick(1, c % 7 == 0 ? 40 : 6);
    const int64_t out_b = pick(1, 3);
    std::string labels[3] = {"bf", "io", "bf"}, win = "size=";
    std::vector<int64_t> in_sp, k_sp, out_sp;
    std::string stride = " stride=", pad = " pad=", ld = " lhs_dilate=", rd = " rhs_dilate=",
                rev = " rhs_reversal=";
    for (size_t s = 0; s < nsp; ++s) {
      const int64_t n = pick(1, 7), k = pick(1, 4), st = pick(1, 3), lhs_d = pick(1, 2),
                    rhs_d = pick(1, 2);
      const int64_t lo = pick(-1, 3), hi = pick(0, 3);
      const int64_t padded = (n - 1) * lhs_d + 1 + lo + hi, span = (k - 1) * rhs_d + 1;
      in_sp.push_back(n), k_sp.push_back(k),
          out_sp.push_back(padded >= span ? (padded - span) / st + 1 : 0);
      const std::string sep = s ? "x" : "", d = std::to_string(s);
      for (std::string& l : labels) l += d;
      win += sep + std::to_string(k), stride += sep + std::to_string(st),
          ld += sep + std::to_string(lhs_d);
      rd += sep + std::to_string(rhs_d), rev += sep + std::to_string(pick(0, 1));
      pad += sep + std::to_string(lo) + "_" + std::to_string(hi);
    }
    for (std::string& l : labels) std::shuffle(l.begin(), l.end(), rng);
    auto shape_of = [&](const std::string& l, char a, int64_t an, char b, int64_t bn,
                        const std::vector<int64_t>& sp) {
      std::vector<int64_t> d;
      for (char ch : l)
        d.push_back(ch == a ? an : ch == b ? bn : sp[static_cast<size_t>(ch - '0')]);
      return d;
    };
    const auto lhs_dims = shape_of(labels[0], 'b', out_b * bgc, 'f', in_f * fgc, in_sp);
    const auto rhs_dims = shape_of(labels[1], 'i', in_f, 'o', out_f, k_sp);
    const auto out_dims = shape_of(labels[2], 'b', out_b, 'f', out_f, out_sp);
    const std::string text = std::string("HloModule t\nENTRY %e {\n%a = ") + t.in +
                             DimsText(lhs_dims) + " parameter(0)\n%b = " + t.in +
                             DimsText(rhs_dims) + " parameter(1)\nROOT %c = " + t.out +
                             DimsText(out_dims) + " convolution(%a, %b), window={" + win + stride +
                             pad + ld + rd + rev + "}, dim_labels=" + labels[0] + "_" + labels[1] +
                             "->" + labels[2] + ", feature_group_count=" + std::to_string(fgc) +
                             ", batch_group_count=" + std::to_string(bgc) + t.precision + "\n}\n";
    Compare(text, {Contents(t.in_type, lhs_dims, rng), Contents(t.in_type, rhs_dims, rng)},
            ReferenceConvolution);
    if (HasFatalFailure()) return;
  }
}

TEST(EvalContractionReference, DotMatchesPlainLoopBitForBit) {
  std::mt19937_64 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % (hi - lo + 1));
  };
  auto list = [](const std::vector<int64_t>& v) {
    std::string s = DimsText(v);
    return "{" + s.substr(1, s.size() - 2) + "}";
  };
  for (int c = 0; c < 150; ++c) {
    const TypeCase& t = kTypes[rng() % std::size(kTypes)];
    // Roles of each dim: 0 batch, 1 contracting, 2 free; sizes shared between the operands.
    const int64_t nb = pick(0, 1), nc = pick(0, 2), nlf = pick(0, 2), nrf = pick(0, 2);
    std::vector<int64_t> batch, contract, lfree, rfree;
    for (int64_t i = 0; i < nb; ++i) batch.push_back(pick(1, 3));
    for (int64_t i = 0; i < nc; ++i)
      contract.push_back(c % 10 == 0 && i == 0 ? pick(4000, 9000) : pick(1, 9));
    for (int64_t i = 0; i < nlf; ++i) lfree.push_back(pick(1, 7));
    for (int64_t i = 0; i < nrf; ++i) rfree.push_back(pick(1, c % 5 == 0 ? 40 : 7));
    // Operand dims in a random order; returns the positions of batch and contracting dims.
    auto layout = [&](const std::vector<int64_t>& free, std::vector<int64_t>& dims,
                      std::vector<int64_t>& b, std::vector<int64_t>& k) {
      std::vector<std::pair<int, int64_t>> roles;  // (role, index within role)
      for (int64_t i = 0; i < nb; ++i) roles.push_back({0, i});
      for (int64_t i = 0; i < nc; ++i) roles.push_back({1, i});
      for (size_t i = 0; i < free.size(); ++i) roles.push_back({2, static_cast<int64_t>(i)});
      std::shuffle(roles.begin(), roles.end(), rng);
      b.assign(static_cast<size_t>(nb), 0), k.assign(static_cast<size_t>(nc), 0);
      for (size_t d = 0; d < roles.size(); ++d) {
        auto [role, i] = roles[d];
        dims.push_back(role == 0 ? batch[i] : role == 1 ? contract[i] : free[i]);
        if (role == 0) b[i] = static_cast<int64_t>(d);
        if (role == 1) k[i] = static_cast<int64_t>(d);
      }
    };
    std::vector<int64_t> ld, rd, lb, rb, lc, rc;
    layout(lfree, ld, lb, lc);
    layout(rfree, rd, rb, rc);
    std::vector<int64_t> od = batch;  // then the free dims of each operand, in dim order
    for (auto [dims, b, k] : {std::tie(ld, lb, lc), std::tie(rd, rb, rc)})
      for (size_t d = 0; d < dims.size(); ++d)
        if (std::count(b.begin(), b.end(), d) + std::count(k.begin(), k.end(), d) == 0)
          od.push_back(dims[d]);
    const std::string text = std::string("HloModule t\nENTRY %e {\n%a = ") + t.in + DimsText(ld) +
                             " parameter(0)\n%b = " + t.in + DimsText(rd) +
                             " parameter(1)\nROOT %d = " + t.out + DimsText(od) +
                             " dot(%a, %b), lhs_batch_dims=" + list(lb) +
                             ", rhs_batch_dims=" + list(rb) + ", lhs_contracting_dims=" + list(lc) +
                             ", rhs_contracting_dims=" + list(rc) + t.precision + "\n}\n";
    Compare(text, {Contents(t.in_type, ld, rng), Contents(t.in_type, rd, rng)}, ReferenceDot);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace tpusim::eval
