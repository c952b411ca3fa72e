#include "compiler/lowering/exact_dot_kernel.h"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "compiler/lowering/asm_util.h"

namespace tpusim::lowering {
namespace {

constexpr int64_t kAccRowBytes = kPackEdge * 4;  // one popped f32 row of 128
int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

std::string ExactDotKernel(const ExactDotShape& d) {
  const int64_t mp = RoundUp(d.m, kPackSublanes), kp = RoundUp(d.k, kPackEdge);
  const int64_t kb = kp / kPackEdge, nb = RoundUp(d.n, kPackEdge) / kPackEdge;
  if (d.m <= 0 || d.k <= 0 || d.n <= 0 || d.a.rows != d.m || d.a.cols != d.k || d.b.rows != d.k ||
      d.b.cols != d.n)
    throw std::invalid_argument("exact dot: operand shapes do not match m, k, n");
  if (mp > kExactDotAccRows) throw std::invalid_argument("exact dot: M exceeds the accumulators");
  const int64_t blocks = (mp + kPackEdge - 1) / kPackEdge * kb + kb * nb;
  if (blocks > kExactDotMaxBlocks) throw std::invalid_argument("exact dot: too many blocks");
  // VMEM: staging, packed A (k blocks of mp rows), packed B (n blocks of kp rows), C blocks.
  const uint64_t stage = 0, a_base = 2 * kPackStageBytes;
  const uint64_t b_base = a_base + static_cast<uint64_t>(PackedBytes(d.a, mp));
  const uint64_t c_base = b_base + static_cast<uint64_t>(PackedBytes(d.b, kp));
  const uint64_t end = c_base + static_cast<uint64_t>(nb * mp * kAccRowBytes);
  if (end > static_cast<uint64_t>(kExactDotVmemBytes))
    throw std::invalid_argument("exact dot: operands do not fit VMEM");
  std::ostringstream s;
  s << "# exact dot C[" << d.m << "," << d.n << "] = A[" << d.m << "," << d.k << "]"
    << (d.a.transposed ? "(T)" : "") << " x B[" << d.k << "," << d.n << "]"
    << (d.b.transposed ? "(T)" : "") << " (compiler/lowering/exact_dot_kernel.cc)\n"
    << ".tag \"" << d.tag << "\"\n";
  const int64_t edge = d.n - (nb - 1) * kPackEdge;
  std::vector<int64_t> widths{kPackEdge};
  if (edge != kPackEdge) widths.push_back(edge);
  for (int64_t cols : widths)
    s << ".desc cout" << cols << " rows=" << d.m << " row_bytes=" << cols * 4
      << " src_stride=" << kAccRowBytes << " dst_stride=" << d.n * 4 << "\n";
  for (int f = 0; f < 7; ++f) s << "    sflag f" << f << ", 0\n";
  s << PackKernel(d.a, PackTarget{a_base, mp}, stage, "pa_")
    << PackKernel(d.b, PackTarget{b_base, kp}, stage, "pb_")
    << "    signal vpu, f4, 1\n    wait seq, f4, 1\n";  // packed operands are in VMEM
  // Column block j on MXU j % mxus; accumulator regions alternate so a block's matmuls
  // never overwrite rows the previous block's pop still reads.
  for (int64_t j = 0; j < nb; ++j) {
    const int mx = static_cast<int>(j % d.mxus);
    const int64_t acc = (j / d.mxus) % 2 * kExactDotAccRows;
    s << "    li r3, " << mp << "\n    li r4, " << acc << "\n";
    for (int64_t t = 0; t < kb; ++t)
      s << "    li r1, "
        << b_base + static_cast<uint64_t>((j * kp + t * kPackEdge) * kPackedRowBytes)
        << "\n    mxu.ldw m" << mx << ", r1\n    li r2, "
        << a_base + static_cast<uint64_t>(t * mp * kPackedRowBytes) << "\n    mxu."
        << (t == 0 ? "mm" : "mma") << " m" << mx << ", r2, r3, r4\n";
    const uint64_t cv = c_base + static_cast<uint64_t>(j * mp * kAccRowBytes);
    s << "    li r5, " << cv << "\n    mxu.pop m" << mx << ", r5, r4, r3\n    signal mxu" << mx
      << ", f5, 1\n    wait dma, f5, 1\n"
      << LoadAddress(6, d.c + static_cast<uint64_t>(j * kAccRowBytes), 7)
      << "    dma.vh r6, r5, cout" << (j + 1 < nb ? kPackEdge : edge) << ", f6\n";
  }
  s << "    wait seq, f6, " << nb << "\n";
  return s.str();
}

}  // namespace tpusim::lowering
