// Dot (general dimension numbers) and convolution (dim_labels, window, feature and batch
// groups). Numerics: operands are converted to the accumulation type first; f32 operands
// at DEFAULT precision are first rounded to bf16 (one MXU pass), HIGH and HIGHEST keep
// f32. Accumulation is f32 (float) for f32/bf16/f16 results, f64 for f64, exact doubles
// for integers, summed in row-major order of the contracted elements.
#include <algorithm>
#include <cctype>

#include "compiler/eval/interpreter.h"
#include "compiler/eval/window.h"
#include "isa/bf16.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Operand elements as the MXU sees them.
std::vector<double> Prepare(const HloInstruction& instr, const Value& v) {
  bool bf16 = false;
  if (v.type() == PrimitiveType::kF32) {
    bf16 = true;
    if (const hlo::WordList* p = instr.GetWordList("operand_precision")) {
      for (std::string w : *p) {
        std::transform(w.begin(), w.end(), w.begin(), [](char c) { return std::tolower(c); });
        if (w == "high" || w == "highest") bf16 = false;
      }
    }
  }
  std::vector<double> out = v.data;
  if (bf16) {
    for (double& x : out) x = isa::RoundToBf16(static_cast<float>(x));
  }
  return out;
}

bool UseFloat(const HloInstruction& instr) {
  PrimitiveType t = instr.shape().type;
  return t == PrimitiveType::kF32 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

// Sums a[k] * b[k] over k = 0..n-1 in order, in the accumulation type.
template <typename Acc>
double Contract(const double* a, const double* b, int64_t n) {
  Acc acc = 0;
  for (int64_t k = 0; k < n; ++k) acc += static_cast<Acc>(a[k]) * static_cast<Acc>(b[k]);
  return acc;
}

// Sums lhs[lo + lhs_off[k]] * rhs[ro + rhs_off[k]] over k in the accumulation type.
template <typename Acc>
double ContractAt(const std::vector<double>& lhs, const std::vector<double>& rhs, int64_t lo,
                  int64_t ro, const std::vector<int64_t>& lhs_off,
                  const std::vector<int64_t>& rhs_off) {
  Acc acc = 0;
  for (size_t k = 0; k < lhs_off.size(); ++k) {
    acc += static_cast<Acc>(lhs[lo + lhs_off[k]]) * static_cast<Acc>(rhs[ro + rhs_off[k]]);
  }
  return acc;
}

// The operand as rows of its contracted elements: row r (the row-major index over `outer`
// dims) holds v[base(r) + off[k]] for every k, so each output element is a dot of two
// contiguous rows (same order of sums, far fewer cache misses).
std::vector<double> PackRows(const std::vector<double>& v, const std::vector<int64_t>& strides,
                             const std::vector<int64_t>& outer_dims,
                             const std::vector<int64_t>& outer_sizes,
                             const std::vector<int64_t>& off) {
  int64_t rows = 1;
  for (int64_t n : outer_sizes) rows *= n;
  const auto k = static_cast<int64_t>(off.size());
  std::vector<double> out(static_cast<size_t>(rows * k));
  std::vector<int64_t> idx(outer_sizes.size(), 0);
  for (int64_t r = 0; r < rows; ++r, NextIndex(idx, outer_sizes)) {
    int64_t base = 0;
    for (size_t j = 0; j < idx.size(); ++j) base += idx[j] * strides[outer_dims[j]];
    double* row = out.data() + r * k;
    for (int64_t i = 0; i < k; ++i) row[i] = v[static_cast<size_t>(base + off[i])];
  }
  return out;
}

std::vector<int64_t> Attr(const HloInstruction& instr, const char* key) {
  const hlo::IntList* l = instr.GetIntList(key);
  return l ? *l : std::vector<int64_t>{};
}

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::count(a.begin(), a.end(), d) == 0 && std::count(b.begin(), b.end(), d) == 0) {
      free.push_back(d);
    }
  }
  return free;
}

Result<Value> Dot(const HloInstruction& instr, Operands ops, Interpreter&) {
  const Value &lhs = *ops[0], &rhs = *ops[1];
  std::vector<int64_t> lb = Attr(instr, "lhs_batch_dims"), rb = Attr(instr, "rhs_batch_dims");
  std::vector<int64_t> lc = Attr(instr, "lhs_contracting_dims"),
                       rc = Attr(instr, "rhs_contracting_dims");
  if (lb.size() != rb.size() || lc.size() != rc.size()) {
    return InstrError(instr, "batch or contracting dimension counts differ");
  }
  std::vector<int64_t> lf = FreeDims(lhs.shape.rank(), lb, lc),
                       rf = FreeDims(rhs.shape.rank(), rb, rc);
  std::vector<int64_t> ls = Strides(lhs.dims()), rs = Strides(rhs.dims());
  // Offsets of every contracted element, in row-major order of the lhs contracting dims.
  std::vector<int64_t> cdims, lhs_off, rhs_off;
  for (int64_t d : lc) cdims.push_back(lhs.dims()[d]);
  std::vector<int64_t> k(cdims.size(), 0);
  int64_t kcount = 1;
  for (int64_t c : cdims) kcount *= c;
  for (int64_t i = 0; i < kcount; ++i, NextIndex(k, cdims)) {
    int64_t lo = 0, ro = 0;
    for (size_t j = 0; j < k.size(); ++j) lo += k[j] * ls[lc[j]], ro += k[j] * rs[rc[j]];
    lhs_off.push_back(lo), rhs_off.push_back(ro);
  }
  // Output elements are (batch..., lhs free..., rhs free...) in row-major order.
  std::vector<int64_t> louter = lb, router = rb, lsizes, rsizes;
  louter.insert(louter.end(), lf.begin(), lf.end());
  router.insert(router.end(), rf.begin(), rf.end());
  for (int64_t d : louter) lsizes.push_back(lhs.dims()[d]);
  for (int64_t d : router) rsizes.push_back(rhs.dims()[d]);
  const std::vector<double> l = PackRows(Prepare(instr, lhs), ls, louter, lsizes, lhs_off);
  const std::vector<double> r = PackRows(Prepare(instr, rhs), rs, router, rsizes, rhs_off);
  int64_t batch = 1, lrows = 1, rrows = 1;
  for (int64_t d : lb) batch *= lhs.dims()[d];
  for (int64_t d : lf) lrows *= lhs.dims()[d];
  for (int64_t d : rf) rrows *= rhs.dims()[d];
  Value out = Value::Zeros(instr.shape());
  const bool use_float = UseFloat(instr);
  int64_t o = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < lrows; ++i)
      for (int64_t j = 0; j < rrows; ++j, ++o) {
        const double* a = l.data() + (b * lrows + i) * kcount;
        const double* c = r.data() + (b * rrows + j) * kcount;
        const double v = use_float ? Contract<float>(a, c, kcount) : Contract<double>(a, c, kcount);
        out.data[static_cast<size_t>(o)] = RoundTo(out.type(), v);
      }
  return out;
}

Result<Value> Convolution(const HloInstruction& instr, Operands ops, Interpreter&) {
  const hlo::ConvDims* dn = instr.conv_dims();
  const hlo::Window* window = instr.window();
  if (dn == nullptr) return InstrError(instr, "missing dim_labels");
  const Value &lhs = *ops[0], &rhs = *ops[1];
  size_t nsp = dn->input_spatial.size();
  hlo::Window win = window ? *window : hlo::Window{};
  win.dims.resize(nsp);
  for (size_t s = 0; s < nsp; ++s) win.dims[s].size = rhs.dims()[dn->kernel_spatial[s]];
  int64_t fgc = instr.GetInt("feature_group_count").value_or(1);
  int64_t bgc = instr.GetInt("batch_group_count").value_or(1);
  int64_t in_features = rhs.dims()[dn->kernel_input_feature];
  int64_t out_features = rhs.dims()[dn->kernel_output_feature];
  int64_t out_batch = instr.shape().dims[dn->output_batch];
  if (fgc < 1 || bgc < 1 || out_features % fgc != 0 || out_features % bgc != 0) {
    return InstrError(instr, "bad feature_group_count or batch_group_count");
  }
  std::vector<int64_t> ls = Strides(lhs.dims()), rs = Strides(rhs.dims());
  std::vector<int64_t> in_sp(nsp), out_sp(nsp);
  for (size_t s = 0; s < nsp; ++s) in_sp[s] = lhs.dims()[dn->input_spatial[s]];
  std::vector<double> l = Prepare(instr, lhs), r = Prepare(instr, rhs);
  Value out = Value::Zeros(instr.shape());
  std::vector<int64_t> idx(out.shape.rank(), 0), lhs_off, rhs_off;
  bool use_float = UseFloat(instr);
  for (int64_t o = 0; o < out.size(); ++o, NextIndex(idx, out.dims())) {
    int64_t f = idx[dn->output_feature];
    int64_t fg = f / (out_features / fgc), bg = f / (out_features / bgc);
    int64_t batch = idx[dn->output_batch] + bg * out_batch;
    int64_t lbase = batch * ls[dn->input_batch] + fg * in_features * ls[dn->input_feature];
    int64_t rbase = f * rs[dn->kernel_output_feature];
    for (size_t s = 0; s < nsp; ++s) out_sp[s] = idx[dn->output_spatial[s]];
    lhs_off.clear(), rhs_off.clear();
    ForEachWindowInput(win, in_sp, out_sp, [&](const auto& k, const auto& in) {
      int64_t lo = 0, ro = 0;
      for (size_t s = 0; s < nsp; ++s) {
        int64_t kk = win.dims[s].reversal ? win.dims[s].size - 1 - k[s] : k[s];
        lo += in[s] * ls[dn->input_spatial[s]], ro += kk * rs[dn->kernel_spatial[s]];
      }
      for (int64_t i = 0; i < in_features; ++i) {
        lhs_off.push_back(lo + i * ls[dn->input_feature]);
        rhs_off.push_back(ro + i * rs[dn->kernel_input_feature]);
      }
    });
    double v = use_float ? ContractAt<float>(l, r, lbase, rbase, lhs_off, rhs_off)
                         : ContractAt<double>(l, r, lbase, rbase, lhs_off, rhs_off);
    out.data[o] = RoundTo(out.type(), v);
  }
  return out;
}

}  // namespace

void RegisterContractions(OpTable& t) {
  t[static_cast<size_t>(Opcode::kDot)] = Dot;
  t[static_cast<size_t>(Opcode::kConvolution)] = Convolution;
}

}  // namespace tpusim::eval
