// The exact dot kernel's HLO side: which dots it takes and the shape it sees them as.
#include "compiler/lowering/dot/exact_dot_op.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "compiler/lowering/dot/exact_dot_kernel.h"
#include "compiler/lowering/dot/mxu_ops.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;

// Row-major strides of an array shape, in elements.
std::vector<int64_t> Strides(const hlo::Shape& s) {
  std::vector<int64_t> st(s.dims.size(), 1);
  for (size_t i = s.dims.size(); i-- > 1;) st[i - 1] = st[i] * s.dims[i];
  return st;
}

// The dimension of a dot operand that is neither contracting nor batch (-1: not exactly one).
int64_t FreeDim(const hlo::Shape& s, const hlo::IntList& batch, int64_t contracting) {
  int64_t free = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(s.dims.size()); ++i) {
    if (i == contracting || std::find(batch.begin(), batch.end(), i) != batch.end()) continue;
    if (free >= 0) return -1;
    free = i;
  }
  return free;
}

// An operand of a dot without batch dimensions seen as a matrix of its row-major memory:
// the leading dimensions merged into one when they are all free (contracting the minor one:
// [B, S, H] as [B*S, H]) or all contracting (the weight gradient's [B, S, H] contracting
// {0, 1} as [B*S, H] contracting 0). Returns the contracting dimension of the matrix, or -1.
int64_t AsMatrix(hlo::Shape& s, const hlo::IntList& contracting) {
  const int64_t rank = static_cast<int64_t>(s.dims.size());
  if (rank <= 2) return contracting.size() == 1 ? contracting[0] : -1;
  const bool minor = contracting.size() == 1 && contracting[0] == rank - 1;
  bool leading = static_cast<int64_t>(contracting.size()) == rank - 1;
  for (size_t i = 0; leading && i < contracting.size(); ++i)
    leading = contracting[i] == static_cast<int64_t>(i);
  if (!minor && !leading) return -1;
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < rank; ++i) rows *= s.dims[i];
  s.dims = {rows, s.dims[rank - 1]};
  return minor ? 1 : 0;
}

}  // namespace

std::string ExactDotOp(const HloInstruction& instr, const OpContext& c, LoweredOp& op) {
  const hlo::Shape &lw = instr.operand(0)->shape(), &rw = instr.operand(1)->shape();
  const hlo::IntList *lc = instr.GetIntList("lhs_contracting_dims"),
                     *rc = instr.GetIntList("rhs_contracting_dims");
  const hlo::IntList *lb = instr.GetIntList("lhs_batch_dims"),
                     *rb = instr.GetIntList("rhs_batch_dims");
  const hlo::IntList none;
  const hlo::IntList &lbd = lb ? *lb : none, &rbd = rb ? *rb : none;
  if (!lc || !rc || lc->empty() || rc->empty() || lbd.size() != rbd.size() || lbd.size() > 2 ||
      !FloatOrBf16(lw) || !FloatOrBf16(rw) || instr.shape().type != hlo::PrimitiveType::kF32 ||
      DotWork(instr).passes != 1)
    return "";
  // l and r: the operands as the kernel reads them (merged into matrices without batch
  // dimensions); lw and rw: as the module holds them.
  hlo::Shape l = lw, r = rw;
  int64_t lk = lc->size() == 1 ? (*lc)[0] : -1, rk = rc->size() == 1 ? (*rc)[0] : -1;
  if (lbd.empty()) lk = AsMatrix(l, *lc), rk = AsMatrix(r, *rc);
  if (lk < 0 || rk < 0) return "";
  const int64_t fa = FreeDim(l, lbd, lk), fb = FreeDim(r, rbd, rk);
  const int64_t l_minor = static_cast<int64_t>(l.dims.size()) - 1;
  const int64_t r_minor = static_cast<int64_t>(r.dims.size()) - 1;
  if (fa < 0 || fb < 0 || (lk != l_minor && fa != l_minor) || (rk != r_minor && fb != r_minor))
    return "";
  const std::vector<int64_t> sl = Strides(l), sr = Strides(r);
  ExactDotShape d;
  d.m = l.dims[fa], d.k = l.dims[lk], d.n = r.dims[fb];
  const bool a_t = fa == l_minor, b_t = rk == r_minor;  // stored as A^T [k, m], B^T [n, k]
  d.a = {c.address(instr.operand(0)), d.m, d.k, a_t, l.type == hlo::PrimitiveType::kBF16,
         a_t ? sl[lk] : sl[fa]};
  d.b = {c.address(instr.operand(1)), d.k, d.n, b_t, r.type == hlo::PrimitiveType::kBF16,
         b_t ? sr[fb] : sr[rk]};
  if (!lbd.empty()) {  // the last batch dimension is the inner one
    const size_t in = lbd.size() - 1;
    d.batch.inner = l.dims[lbd[in]];
    d.a.inner_stride = sl[lbd[in]], d.b.inner_stride = sr[rbd[in]];
    if (in == 1) {
      d.batch.outer = l.dims[lbd[0]];
      d.a.outer_stride = sl[lbd[0]], d.b.outer_stride = sr[rbd[0]];
    }
  }
  d.c = c.address(&instr), d.tag = instr.name(), d.mxus = c.mxus;
  d.vmem_bytes = std::min<int64_t>(c.vmem_limit, kExactDotVmemBytes);
  std::string k;
  try {
    k = ExactDotKernel(d);
  } catch (const std::invalid_argument&) {
    return "";
  }
  op.kind = KernelKind::kMxu;
  op.flops = 2.0 * d.m * d.k * d.n * d.batch.count();
  op.hbm_bytes = ByteSize(lw) + ByteSize(rw) + ByteSize(instr.shape());
  op.exact = true;
  op.vmem_bytes = d.vmem_bytes;  // PlanExactDot kept to it
  return k;
}

}  // namespace tpusim::lowering
