#include "compiler/lowering/dot/mxu_ops.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "compiler/assembly/asm_util.h"
#include "compiler/lowering/dot/matmul_kernel.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

int64_t Product(const std::vector<int64_t>& dims, const std::vector<int64_t>& which) {
  int64_t p = 1;
  for (int64_t d : which) p *= dims[static_cast<size_t>(d)];
  return p;
}

std::vector<int64_t> Rest(int64_t rank, const std::vector<int64_t>& a,
                          const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end())
      out.push_back(d);
  return out;
}

int Passes(const HloInstruction& op) {
  const hlo::WordList* p = op.GetWordList("operand_precision");
  int passes = 1;
  if (p)
    for (const std::string& w : *p)
      passes = std::max(passes, w == "highest" ? 6 : w == "high" ? 3 : 1);
  return passes;
}

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

MxuWork DotWork(const HloInstruction& dot) {
  const auto& ld = dot.operand(0)->shape().dims;
  const auto& rd = dot.operand(1)->shape().dims;
  auto list = [&](const char* key) {
    const hlo::IntList* l = dot.GetIntList(key);
    return l ? std::vector<int64_t>(l->begin(), l->end()) : std::vector<int64_t>{};
  };
  const auto lb = list("lhs_batch_dims"), lc = list("lhs_contracting_dims");
  const auto rb = list("rhs_batch_dims"), rc = list("rhs_contracting_dims");
  const auto lf = Rest(static_cast<int64_t>(ld.size()), lb, lc);
  const auto rf = Rest(static_cast<int64_t>(rd.size()), rb, rc);
  MxuWork w;
  w.batch = Product(ld, lb), w.m = Product(ld, lf), w.k = Product(ld, lc), w.n = Product(rd, rf);
  w.passes = Passes(dot);
  w.flops = 2.0 * w.batch * w.m * w.k * w.n;
  w.exact = lb.empty() && ld.size() == 2 && rd.size() == 2 && lc == std::vector<int64_t>{1} &&
            rc == std::vector<int64_t>{0} &&
            dot.operand(0)->shape().type == hlo::PrimitiveType::kBF16 &&
            dot.operand(1)->shape().type == hlo::PrimitiveType::kBF16 &&
            dot.shape().type == hlo::PrimitiveType::kF32 && w.passes == 1;
  return w;
}

MxuWork ConvolutionWork(const HloInstruction& conv) {
  const hlo::ConvDims* cd = conv.conv_dims();
  const auto& ker = conv.operand(1)->shape().dims;
  const auto& out = conv.shape().dims;
  MxuWork w;
  if (!cd) return w;
  int64_t batch = out[static_cast<size_t>(cd->output_batch)], spatial = 1, taps = 1, dilation = 1;
  for (int64_t d : cd->output_spatial) spatial *= out[static_cast<size_t>(d)];
  for (int64_t d : cd->kernel_spatial) taps *= ker[static_cast<size_t>(d)];
  if (const hlo::Window* win = conv.window())
    for (const hlo::WindowDim& d : win->dims) dilation *= d.lhs_dilate;
  const int64_t groups = conv.GetInt("feature_group_count").value_or(1);
  const int64_t in_features = ker[static_cast<size_t>(cd->kernel_input_feature)];
  w.batch = groups;
  w.m = batch * spatial;
  w.n = out[static_cast<size_t>(cd->output_feature)] / groups;
  // Taps landing on lhs-dilation holes do no work: about taps / dilation of them remain.
  w.k = std::max<int64_t>(1, (taps + dilation - 1) / dilation) * in_features;
  w.passes = Passes(conv);
  w.flops = 2.0 * w.batch * w.m * w.k * w.n;
  if (dilation > 1) w.note = "lhs dilation: holes skipped";
  return w;
}

std::string MxuKernel(MxuWork& w, uint64_t a, uint64_t b, uint64_t c, const std::string& tag,
                      int mxus) {
  MatmulShape s;
  s.k = RoundUp(w.k, 128);
  s.n = RoundUp(w.n, 128 * mxus);
  const int64_t m8 = RoundUp(w.m, 8);
  const int64_t pass_count = (m8 + 2047) / 2048;
  s.rows_per_pass = RoundUp((m8 + pass_count - 1) / pass_count, 8);
  s.m = s.rows_per_pass * pass_count;
  s.a = a, s.b = b, s.c = c, s.tag = tag, s.mxus = mxus;
  s.batch = w.batch;
  s.a_stride = static_cast<uint64_t>(s.m * s.k * 2);
  s.b_stride = static_cast<uint64_t>(s.k * s.n * 2);
  s.c_stride = static_cast<uint64_t>(s.m * s.n * 4);
  if (s.m != w.m || s.k != w.k || s.n != w.n) {
    w.exact = false;
    const double useful =
        static_cast<double>(w.m) * w.k * w.n / (static_cast<double>(s.m) * s.k * s.n);
    char text[96];
    std::snprintf(text, sizeof text, "MXU tiles padded to %lldx%lldx%lld (%.0f%% useful)",
                  static_cast<long long>(s.m), static_cast<long long>(s.k),
                  static_cast<long long>(s.n), 100 * useful);
    w.note += (w.note.empty() ? "" : "; ") + std::string(text);
  }
  std::string kernel;
  for (int p = 0; p < w.passes; ++p)
    kernel += assembly::ScopeKernel(MatmulKernel(s), "p" + std::to_string(p) + "_") +
              (p + 1 < w.passes ? assembly::DrainBarrier(mxus) : "");
  return kernel;
}

}  // namespace tpusim::lowering
