#include "compiler/lowering/dot/exact_dot_plan.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::lowering {
namespace {

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// VMEM the plan needs with both operands streaming (double buffers) and two result buffers.
int64_t Footprint(const ExactDotShape& d, int64_t mb, int64_t nb, int64_t kc) {
  const int64_t ea = d.a.bf16 ? 2 : 4, eb = d.b.bf16 ? 2 : 4;
  return 2 * (mb * kc * (ea + 2) + kc * nb * (eb + 2) + mb * nb * 4);
}

int64_t StepBytes(const ExactDotShape& d, int64_t mb, int64_t nb, int64_t kc) {
  return kc * (mb * (d.a.bf16 ? 2 : 4) + nb * (d.b.bf16 ? 2 : 4));
}

// Fills X's geometry: `chunk_rows` x `chunk_cols` chunks of the stored matrix.
DotOperand Operand(const PackSource& s, int64_t logical_rows_chunk, int64_t logical_cols_chunk,
                   bool k_is_logical_rows) {
  DotOperand o;
  o.hbm = s.address, o.elem = s.bf16 ? 2 : 4;
  o.rows = s.transposed ? s.cols : s.rows, o.cols = s.transposed ? s.rows : s.cols;
  o.chunk_rows = s.transposed ? logical_cols_chunk : logical_rows_chunk;
  o.chunk_cols = s.transposed ? logical_rows_chunk : logical_cols_chunk;
  o.k_in_rows = s.transposed != k_is_logical_rows;
  o.ld = s.row_stride > 0 ? s.row_stride : o.cols;
  o.outer_stride = s.outer_stride * o.elem, o.inner_stride = s.inner_stride * o.elem;
  if (o.ld < o.cols) throw std::invalid_argument("exact dot: rows overlap");
  if ((o.ld * o.elem) % 4 || (o.inner_stride | o.outer_stride) % 4 || o.hbm % 4)
    throw std::invalid_argument("exact dot: bf16 rows of odd length are not 4-byte aligned");
  return o;
}

}  // namespace

ExactDotPlan PlanExactDot(const ExactDotShape& d) {
  if (d.m <= 0 || d.k <= 0 || d.n <= 0 || d.a.rows != d.m || d.a.cols != d.k || d.b.rows != d.k ||
      d.b.cols != d.n)
    throw std::invalid_argument("exact dot: operand shapes do not match m, k, n");
  ExactDotPlan p;
  p.m = d.m, p.k = d.k, p.n = d.n, p.b_transposed = d.b.transposed, p.batch = d.batch;
  if (d.batch.outer < 1 || d.batch.inner < 1) throw std::invalid_argument("exact dot: batch");
  // A^T is transposed in 128x128 tiles, so its blocks are whole tiles of M.
  const int64_t m_tile = d.a.transposed ? kPackEdge : kPackSublanes;
  const int64_t col_blocks = CeilDiv(d.n, kPackEdge);
  // Flags and registers of the kernel are laid out for up to two MXUs (v2, v3 cores).
  p.mxus = static_cast<int>(std::min<int64_t>({d.mxus, 2, col_blocks}));
  auto nb_of = [&](int64_t per_mxu) { return per_mxu * p.mxus * kPackEdge; };
  auto fits = [&](int64_t mb, int64_t nb, int64_t kc) {
    return Footprint(d, mb, nb, kc) <= d.vmem_bytes &&
           StepBytes(d, mb, nb, kc) <= kExactDotStepBytes;
  };
  // Each shape of result block the accumulators take (mb rows x per_mxu column blocks per
  // MXU), with the longest K chunk that fits; the plan moving the fewest bytes wins (each
  // operand is read once per block of the other; a step costs its start besides).
  int64_t mb = 0, per_mxu = 0, kc = 0;
  double best = 0;
  for (int64_t rows = std::min(RoundUp(d.m, m_tile), kExactDotAccRows); rows >= m_tile;
       rows = rows > kPackEdge ? RoundUp(rows / 2, m_tile) : 0) {
    for (int64_t w = std::min(kExactDotAccRows / rows, CeilDiv(col_blocks, p.mxus)); w >= 1; --w) {
      int64_t k = kPackEdge;
      if (!fits(rows, nb_of(w), k)) continue;
      while (k + kPackEdge <= RoundUp(d.k, kPackEdge) && fits(rows, nb_of(w), k + kPackEdge))
        k += kPackEdge;
      const double m_blocks = CeilDiv(d.m, rows), n_blocks = CeilDiv(d.n, nb_of(w));
      const double bytes = static_cast<double>(d.m) * d.k * (d.a.bf16 ? 2 : 4) * n_blocks +
                           static_cast<double>(d.k) * d.n * (d.b.bf16 ? 2 : 4) * m_blocks +
                           m_blocks * n_blocks * CeilDiv(d.k, k) * kExactDotStepOverheadBytes;
      if (per_mxu == 0 || bytes < best) mb = rows, per_mxu = w, kc = k, best = bytes;
    }
  }
  if (per_mxu == 0) throw std::invalid_argument("exact dot: no block fits VMEM");
  // Balance the blocks: as many as needed, each as even as the tiles allow.
  p.mb = RoundUp(CeilDiv(d.m, CeilDiv(d.m, mb)), m_tile);
  const int64_t n_blocks = CeilDiv(col_blocks, per_mxu * p.mxus);
  p.per_mxu = CeilDiv(CeilDiv(col_blocks, n_blocks), p.mxus);
  p.nb = nb_of(p.per_mxu);
  p.kc = RoundUp(CeilDiv(d.k, CeilDiv(d.k, kc)), kPackEdge);
  p.a = Operand(d.a, p.mb, p.kc, /*k_is_logical_rows=*/false);
  p.b = Operand(d.b, p.kc, p.nb, /*k_is_logical_rows=*/true);
  p.a.transpose = d.a.transposed;
  const bool single = d.batch.count() == 1;  // else each instance has its own operands
  p.a.resident = single && p.m_blocks() == 1 && p.k_chunks() == 1;
  p.b.resident = single && !p.a.resident && p.n_blocks() == 1 && p.k_chunks() == 1;
  if (!single) {
    p.a.batch_word = kBatchWordA, p.b.batch_word = kBatchWordB;
    const int64_t last =
        std::max(p.a.outer_stride * (d.batch.outer - 1) + p.a.inner_stride * (d.batch.inner - 1),
                 p.b.outer_stride * (d.batch.outer - 1) + p.b.inner_stride * (d.batch.inner - 1));
    if (last >= (int64_t{1} << 31) || d.batch.count() * d.m * d.n * 4 >= (int64_t{1} << 31))
      throw std::invalid_argument("exact dot: batch offsets beyond an SMEM word");
  }
  // Edge widths are copied by DMA in whole 4-byte words.
  for (const DotOperand* o : {&p.a, &p.b})
    if (((o->cols % o->chunk_cols) % kPackEdge * o->elem) % 4)
      throw std::invalid_argument("exact dot: bf16 edge of odd width is not 4-byte aligned");
  uint64_t at = 0;
  for (DotOperand* o : {&p.a, &p.b}) {
    o->stage = at, at += static_cast<uint64_t>(o->buffers() * o->stage_bytes());
    o->packed = at, at += static_cast<uint64_t>(o->buffers() * o->packed_bytes());
  }
  p.out = at, at += static_cast<uint64_t>(2 * p.out_bytes());
  p.vmem_end = at;
  if (p.vmem_end > static_cast<uint64_t>(d.vmem_bytes))
    throw std::invalid_argument("exact dot: buffers do not fit VMEM");
  return p;
}

}  // namespace tpusim::lowering
