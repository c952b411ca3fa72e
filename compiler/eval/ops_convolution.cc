// Convolution (dim_labels, window, feature and batch groups) as row blocks: each output
// position's window is found once and its lhs elements gathered into a contiguous row, which
// meets the kernel laid out per output feature (PanelMatrix). Every output element sums, in
// order, window position (row-major; padding and base-dilation holes skipped) then input
// feature, as the plain definition does.
#include <algorithm>

#include "compiler/eval/contraction.h"
#include "compiler/eval/contraction_kernel.h"
#include "compiler/eval/window.h"

namespace tpusim::eval {
namespace {

using hlo::HloInstruction;

struct ConvShape {
  const hlo::ConvDims* dn = nullptr;
  hlo::Window win;
  int64_t in_features = 0, out_features = 0, out_batch = 0, fgc = 1, bgc = 1;
  int64_t windows = 1;  // kernel spatial positions
  std::vector<int64_t> ls, rs, os, in_sp;
};

// Where each output position's window lands: `runs` pair its gathered row with kernel rows
// (window index * in_features + feature), `lhs_offsets` are the window's input offsets.
struct Windows {
  std::vector<int64_t> out_base, batch;      // per position: output offset, batch index
  std::vector<size_t> run_begin, win_begin;  // per position + 1: into runs / lhs_offsets
  std::vector<KRun> runs;
  std::vector<int64_t> lhs_offsets;
};

Windows FindWindows(const ConvShape& c, const Value& out) {
  const hlo::ConvDims& dn = *c.dn;
  const size_t nsp = c.in_sp.size();
  std::vector<int64_t> pos_dims = out.dims(), idx(pos_dims.size(), 0), out_sp(nsp);
  pos_dims[dn.output_feature] = 1;
  int64_t positions = 1;
  for (int64_t d : pos_dims) positions *= d;
  Windows w;
  for (int64_t p = 0; p < positions; ++p, NextIndex(idx, pos_dims)) {
    w.out_base.push_back(Linear(idx, c.os));
    w.batch.push_back(idx[dn.output_batch]);
    w.run_begin.push_back(w.runs.size());
    w.win_begin.push_back(w.lhs_offsets.size());
    for (size_t s = 0; s < nsp; ++s) out_sp[s] = idx[dn.output_spatial[s]];
    ForEachWindowInput(c.win, c.in_sp, out_sp, [&](const auto& k, const auto& in) {
      int64_t lo = 0, window = 0;
      for (size_t s = 0; s < nsp; ++s) {
        const hlo::WindowDim& d = c.win.dims[s];
        window = window * d.size + (d.reversal ? d.size - 1 - k[s] : k[s]);
        lo += in[s] * c.ls[dn.input_spatial[s]];
      }
      w.lhs_offsets.push_back(lo);
      const KRun run{window * c.in_features, c.in_features};
      if (w.runs.size() > w.run_begin.back() &&
          w.runs.back().b_row + w.runs.back().length == run.b_row) {
        w.runs.back().length += run.length;
      } else {
        w.runs.push_back(run);
      }
    });
  }
  w.run_begin.push_back(w.runs.size());
  w.win_begin.push_back(w.lhs_offsets.size());
  return w;
}

// The kernel for output features [f0, f1): row window * in_features + i, column f - f0.
template <typename T>
PanelMatrix<T> PackKernel(const ConvShape& c, const Value& rhs, bool bf16, int64_t f0, int64_t f1) {
  const hlo::ConvDims& dn = *c.dn;
  PanelMatrix<T> b(c.windows * c.in_features, f1 - f0);
  std::vector<int64_t> k(c.in_sp.size(), 0), sizes;
  for (const hlo::WindowDim& d : c.win.dims) sizes.push_back(d.size);
  for (int64_t window = 0; window < c.windows; ++window, NextIndex(k, sizes)) {
    int64_t ro = 0;
    for (size_t s = 0; s < k.size(); ++s) ro += k[s] * c.rs[dn.kernel_spatial[s]];
    for (int64_t i = 0; i < c.in_features; ++i)
      for (int64_t f = f0; f < f1; ++f)
        b.at(window * c.in_features + i, f - f0) = Prepared<T>(
            rhs.data[ro + i * c.rs[dn.kernel_input_feature] + f * c.rs[dn.kernel_output_feature]],
            bf16);
  }
  return b;
}

// Bytes of gathered lhs rows worked on at once.
constexpr int64_t kGatherBytes = 256 * 1024;

template <typename T>
Value ConvWith(const HloInstruction& instr, const Value& lhs, const Value& rhs,
               const ConvShape& c) {
  const hlo::ConvDims& dn = *c.dn;
  Value out = Value::Zeros(instr.shape());
  const Windows w = FindWindows(c, out);
  const auto positions = static_cast<int64_t>(w.out_base.size());
  const bool lbf = RoundsToBf16(instr, lhs), rbf = RoundsToBf16(instr, rhs);
  std::vector<T> l(lhs.data.size());
  for (size_t i = 0; i < l.size(); ++i) l[i] = Prepared<T>(lhs.data[i], lbf);
  const int64_t kfull = c.windows * c.in_features, lf = c.ls[dn.input_feature];
  const int64_t chunk = std::max<int64_t>(
      1, kGatherBytes / static_cast<int64_t>(sizeof(T)) / std::max<int64_t>(kfull, 1));
  const int64_t per_fg = c.out_features / c.fgc, per_bg = c.out_features / c.bgc;
  for (int64_t f0 = 0; f0 < c.out_features;) {
    // Output features [f0, f1) share their feature group fg and batch group bg.
    const int64_t fg = f0 / per_fg, bg = f0 / per_bg;
    const int64_t f1 = std::min((fg + 1) * per_fg, (bg + 1) * per_bg);
    const PanelMatrix<T> b = PackKernel<T>(c, rhs, rbf, f0, f1);
    const int64_t acc_ld = b.Panels() * kPanelWidth<T>;
    std::vector<T> a(static_cast<size_t>(chunk * kfull)), acc(static_cast<size_t>(chunk * acc_ld));
    for (int64_t p0 = 0; p0 < positions; p0 += chunk) {
      const int64_t p1 = std::min(positions, p0 + chunk);
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t lbase =
            (w.batch[p] + bg * c.out_batch) * c.ls[dn.input_batch] + fg * c.in_features * lf;
        T* row = a.data() + (p - p0) * kfull;
        for (size_t x = w.win_begin[p]; x < w.win_begin[p + 1]; ++x)
          for (int64_t i = 0; i < c.in_features; ++i) *row++ = l[lbase + w.lhs_offsets[x] + i * lf];
      }
      std::fill(acc.begin(), acc.end(), T{0});
      // Consecutive positions with the same runs (same valid window) go through together.
      for (int64_t g0 = p0, g1; g0 < p1; g0 = g1) {
        const std::span<const KRun> runs(w.runs.data() + w.run_begin[g0],
                                         w.run_begin[g0 + 1] - w.run_begin[g0]);
        for (g1 = g0 + 1; g1 < p1; ++g1) {
          const std::span<const KRun> next(w.runs.data() + w.run_begin[g1],
                                           w.run_begin[g1 + 1] - w.run_begin[g1]);
          if (!std::equal(runs.begin(), runs.end(), next.begin(), next.end())) break;
        }
        AccumulateRows(a.data() + (g0 - p0) * kfull, kfull, g1 - g0, runs, b,
                       acc.data() + (g0 - p0) * acc_ld, acc_ld);
      }
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t f = f0; f < f1; ++f)
          out.data[w.out_base[p] + f * c.os[dn.output_feature]] =
              RoundTo(out.type(), static_cast<double>(acc[(p - p0) * acc_ld + f - f0]));
    }
    f0 = f1;
  }
  return out;
}

}  // namespace

Result<Value> Convolution(const HloInstruction& instr, Operands ops, Interpreter&) {
  ConvShape c;
  c.dn = instr.conv_dims();
  if (c.dn == nullptr) return InstrError(instr, "missing dim_labels");
  const hlo::ConvDims& dn = *c.dn;
  const Value &lhs = *ops[0], &rhs = *ops[1];
  const size_t nsp = dn.input_spatial.size();
  c.win = instr.window() ? *instr.window() : hlo::Window{};
  c.win.dims.resize(nsp);
  for (size_t s = 0; s < nsp; ++s) c.win.dims[s].size = rhs.dims()[dn.kernel_spatial[s]];
  c.fgc = instr.GetInt("feature_group_count").value_or(1);
  c.bgc = instr.GetInt("batch_group_count").value_or(1);
  c.in_features = rhs.dims()[dn.kernel_input_feature];
  c.out_features = rhs.dims()[dn.kernel_output_feature];
  c.out_batch = instr.shape().dims[dn.output_batch];
  if (c.fgc < 1 || c.bgc < 1 || c.out_features % c.fgc != 0 || c.out_features % c.bgc != 0) {
    return InstrError(instr, "bad feature_group_count or batch_group_count");
  }
  c.ls = Strides(lhs.dims()), c.rs = Strides(rhs.dims()), c.os = Strides(instr.shape().dims);
  for (size_t s = 0; s < nsp; ++s) c.in_sp.push_back(lhs.dims()[dn.input_spatial[s]]);
  for (const hlo::WindowDim& d : c.win.dims) c.windows *= d.size;
  if (instr.shape().ElementCount() == 0) return Value::Zeros(instr.shape());
  return UseFloat(instr) ? ConvWith<float>(instr, lhs, rhs, c)
                         : ConvWith<double>(instr, lhs, rhs, c);
}

}  // namespace tpusim::eval
