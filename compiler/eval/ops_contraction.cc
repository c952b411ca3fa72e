// Dot (general dimension numbers); convolution lives in ops_convolution.cc. Numerics (both):
// operands are converted to the accumulation type first; f32 operands at DEFAULT precision
// are first rounded to bf16 (one MXU pass), HIGH and HIGHEST keep f32. Accumulation is f32
// (float) for f32/bf16/f16 results, f64 for f64, exact doubles for integers, summed in
// row-major order of the contracted elements (contraction_kernel.h keeps that order).
#include <algorithm>

#include "compiler/eval/contraction.h"
#include "compiler/eval/contraction_kernel.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Per row of the operand's `outer` dims (row-major over them): the flat index of its first
// element.
std::vector<int64_t> RowBases(const std::vector<int64_t>& strides,
                              const std::vector<int64_t>& outer_dims,
                              const std::vector<int64_t>& outer_sizes) {
  int64_t rows = 1;
  for (int64_t n : outer_sizes) rows *= n;
  std::vector<int64_t> bases(static_cast<size_t>(rows)), idx(outer_sizes.size(), 0);
  for (int64_t r = 0; r < rows; ++r, NextIndex(idx, outer_sizes)) {
    int64_t base = 0;
    for (size_t j = 0; j < idx.size(); ++j) base += idx[j] * strides[outer_dims[j]];
    bases[static_cast<size_t>(r)] = base;
  }
  return bases;
}

// A dot as row blocks: per batch, the lhs rows (contracted elements contiguous) times the rhs
// laid out in column panels, summed in row-major order of the contracting dims.
struct DotPlan {
  int64_t batch = 1, lrows = 1, rrows = 1, kcount = 1;
  std::vector<int64_t> lhs_base, rhs_base, lhs_off, rhs_off;
};

// Contracted elements per block of K: one block's lhs rows stay in cache across panels.
constexpr int64_t kDotKBlock = 4096;
// Operand rows packed together (k outer within a tile).
constexpr int64_t kPackTile = 64;

template <typename T>
Value DotWith(const HloInstruction& instr, const Value& lhs, const Value& rhs, const DotPlan& p) {
  const bool lbf = RoundsToBf16(instr, lhs), rbf = RoundsToBf16(instr, rhs);
  Value out = Value::Zeros(instr.shape());
  std::vector<T> a(static_cast<size_t>(p.lrows * p.kcount));
  PanelMatrix<T> b(p.kcount, p.rrows);
  const int64_t acc_ld = b.Panels() * kPanelWidth<T>;
  std::vector<T> acc(static_cast<size_t>(p.lrows * acc_ld));
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    // Tiles of kPackTile rows, k outer, so both the reads and the writes stay in cache.
    for (int64_t i0 = 0; i0 < p.lrows; i0 += kPackTile) {
      const int64_t i1 = std::min(p.lrows, i0 + kPackTile);
      const int64_t* base = p.lhs_base.data() + bi * p.lrows;
      for (int64_t k = 0; k < p.kcount; ++k)
        for (int64_t i = i0; i < i1; ++i)
          a[static_cast<size_t>(i * p.kcount + k)] =
              Prepared<T>(lhs.data[base[i] + p.lhs_off[k]], lbf);
    }
    for (int64_t j0 = 0; j0 < p.rrows; j0 += kPackTile) {
      const int64_t j1 = std::min(p.rrows, j0 + kPackTile);
      const int64_t* base = p.rhs_base.data() + bi * p.rrows;
      for (int64_t k = 0; k < p.kcount; ++k)
        for (int64_t j = j0; j < j1; ++j)
          b.at(k, j) = Prepared<T>(rhs.data[base[j] + p.rhs_off[k]], rbf);
    }
    std::fill(acc.begin(), acc.end(), T{0});
    for (int64_t k0 = 0; k0 < p.kcount; k0 += kDotKBlock) {
      const KRun run{k0, std::min(kDotKBlock, p.kcount - k0)};
      AccumulateRows(a.data() + k0, p.kcount, p.lrows, std::span<const KRun>(&run, 1), b,
                     acc.data(), acc_ld);
    }
    double* o = out.data.data() + bi * p.lrows * p.rrows;
    for (int64_t i = 0; i < p.lrows; ++i)
      for (int64_t j = 0; j < p.rrows; ++j)
        *o++ = RoundTo(out.type(), static_cast<double>(acc[static_cast<size_t>(i * acc_ld + j)]));
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
  DotPlan p;
  // Offsets of every contracted element, in row-major order of the lhs contracting dims.
  std::vector<int64_t> cdims;
  for (int64_t d : lc) cdims.push_back(lhs.dims()[d]);
  std::vector<int64_t> k(cdims.size(), 0);
  for (int64_t c : cdims) p.kcount *= c;
  for (int64_t i = 0; i < p.kcount; ++i, NextIndex(k, cdims)) {
    int64_t lo = 0, ro = 0;
    for (size_t j = 0; j < k.size(); ++j) lo += k[j] * ls[lc[j]], ro += k[j] * rs[rc[j]];
    p.lhs_off.push_back(lo), p.rhs_off.push_back(ro);
  }
  // Output elements are (batch..., lhs free..., rhs free...) in row-major order.
  std::vector<int64_t> louter = lb, router = rb, lsizes, rsizes;
  louter.insert(louter.end(), lf.begin(), lf.end());
  router.insert(router.end(), rf.begin(), rf.end());
  for (int64_t d : louter) lsizes.push_back(lhs.dims()[d]);
  for (int64_t d : router) rsizes.push_back(rhs.dims()[d]);
  p.lhs_base = RowBases(ls, louter, lsizes);
  p.rhs_base = RowBases(rs, router, rsizes);
  for (int64_t d : lb) p.batch *= lhs.dims()[d];
  for (int64_t d : lf) p.lrows *= lhs.dims()[d];
  for (int64_t d : rf) p.rrows *= rhs.dims()[d];
  if (p.batch * p.lrows * p.rrows == 0) return Value::Zeros(instr.shape());
  return UseFloat(instr) ? DotWith<float>(instr, lhs, rhs, p) : DotWith<double>(instr, lhs, rhs, p);
}

}  // namespace

void RegisterContractions(OpTable& t) {
  t[static_cast<size_t>(Opcode::kDot)] = Dot;
  t[static_cast<size_t>(Opcode::kConvolution)] = Convolution;
}

}  // namespace tpusim::eval
