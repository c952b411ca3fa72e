#include "compiler/lowering/dot/matmul_kernel.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/assembly/asm_util.h"

namespace tpusim::lowering {

std::string MatmulKernel(const MatmulShape& shape) {
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  const int64_t mc = shape.rows_per_pass > 0 ? shape.rows_per_pass : std::min<int64_t>(m, 2048);
  if (m <= 0 || m % 8 || mc % 8 || mc > 2048 || m % mc || k <= 0 || k % 128 || n <= 0 ||
      n % (128 * shape.mxus) || shape.batch < 1)
    throw std::invalid_argument(
        "the MXU kernel tiles M in multiples of 8 (passes of at most 2048 rows), K of 128 and "
        "N of 128 per MXU; got " +
        std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
  if (std::max({shape.a_stride, shape.b_stride, shape.c_stride}) >= (uint64_t{1} << 31))
    throw std::invalid_argument("batched matmul strides must be below 2 GiB");
  const int mxus = shape.mxus;
  const int64_t half = n / (128 * mxus);  // column blocks per MXU
  // A step covers kg k-blocks so one round of DMA latency serves kg weight tiles.
  const int64_t kg = (k / 128) % 4 == 0 ? 4 : (k / 128) % 2 == 0 ? 2 : 1, kb = k / 128 / kg;
  // VMEM: A buffers 2 x kg x mc*256 B; B tiles 2 buffers x 2 MXUs x kg x 32 KiB; output
  // 2 x mc*512 B.
  const int64_t a_sub = mc * 256, a_buf = kg * a_sub, b_mxu = kg * 0x8000, b_buf = 2 * b_mxu;
  const int64_t b_base = 2 * a_buf, out_base = b_base + 2 * b_buf;
  auto both = [&](const std::string& m0, const std::string& m1) {  // MXU0's line, MXU1's
    return "    " + m0 + "\n" + (mxus == 2 ? "    " + m1 + "\n" : "");
  };
  // Loads run one step ahead of the MXUs: step t computes from buffer t & 1 while the
  // load cursor (r19 row chunk, r20 column block, r21 k block; r22 loads issued) fills the
  // other buffer. The cursor stops at the end of a batch instance.
  auto load = [&](const std::string& id) {
    std::ostringstream l;
    l << "    andi r23, r22, 1\n    muli r29, r23, " << a_buf << "\n"  // VMEM A buffer
      << "    muli r30, r23, " << b_buf << "\n    addi r30, r30, " << b_base << "\n"  // B tiles
      << "    addi r27, r30, " << b_mxu << "\n"
      << "    muli r8, r19, " << k * 2 << "\n    muli r9, r21, " << 256 * kg
      << "\n    add r8, r8, r9\n    add r8, r8, r24\n"  // HBM A block
      << "    muli r9, r21, " << 128 * kg * n * 2 << "\n    shli r10, r20, 8\n"
      << "    add r9, r9, r10\n    add r9, r9, r25\n    addi r10, r9, " << half * 256 << "\n";
    for (int buf = 0; buf < 2; ++buf) {
      const std::string f = std::to_string(buf);
      l << (buf == 0 ? "    bne r23, r0, odd_load" + id + "\n" : "odd_load" + id + ":\n")
        << "    wait dma, f" << 2 + buf << ", " << mxus << "\n";
      for (int64_t j = 0; j < kg; ++j)  // sub-block j: A columns j*128.. into its own rows
        l << "    dma.hv r29, r8, ablk, f" << buf << "\n    addi r29, r29, " << a_sub
          << "\n    addi r8, r8, 256\n";
      l << both("dma.hv r30, r9, btile, f" + f, "dma.hv r27, r10, btile, f" + f)
        << (buf == 0 ? "    jmp loaded" + id + "\n" : "");
    }
    l << "loaded" << id << ":\n    addi r22, r22, 1\n"  // advance the cursor
      << "    addi r21, r21, 1\n    li r23, " << kb << "\n    blt r21, r23, moved" << id << "\n"
      << "    li r21, 0\n    addi r20, r20, 1\n    li r23, " << half << "\n    blt r20, r23, moved"
      << id << "\n    li r20, 0\n    addi r19, r19, MC\nmoved" << id << ":\n";
    return l.str();
  };
  std::ostringstream s;
  s << "# matmul C[" << m << "," << n << "] = A[" << m << "," << k << "] x B[" << k << "," << n
    << "] on " << mxus << " MXU(s) (compiler/lowering/dot/matmul_kernel.cc)\n"
    << ".desc ablk rows=" << mc << " row_bytes=256 src_stride=" << k * 2 << " dst_stride=256\n"
    << ".desc btile rows=" << 128 * kg << " row_bytes=256 src_stride=" << n * 2
    << " dst_stride=256\n"
    << ".desc cblk rows=" << mc << " row_bytes=512 src_stride=512 dst_stride=" << n * 4 << "\n"
    << ".equ MC " << mc << "\n"
    << ".tag \"" << shape.tag << "\"\n"
    << assembly::LoadAddress(24, shape.a, 27) << assembly::LoadAddress(25, shape.b, 27)
    << assembly::LoadAddress(26, shape.c, 27)
    // f0/f1: buffer b loaded (1 + mxus copies); f2/f3: buffer b free (one per MXU);
    // f4/f5: MXU0/1 popped; f6/f7: output buffer of MXU0/1 free.
    << "    sflag f2, " << mxus << "\n    sflag f3, " << mxus << "\n    sflag f6, 1\n"
    << "    sflag f7, 1\n    li r28, 0\nbatch:\n"
    << "    li r18, 0\n    li r19, 0\n    li r20, 0\n    li r21, 0\n    li r22, 0\n"
    << load("_first") << "    li r1, 0\n"  // r1 = row chunk start
    << "rows:\n    li r2, 0\n"             // r2 = column block of MXU0; MXU1 takes r2 + half
    << "cols:\n    li r3, 0\n"             // r3 = k block
    << "kblk:\n    li r13, " << m << "\n    bge r19, r13, nolookahead\n"
    << load("_next") << "nolookahead:\n"
    << "    andi r4, r18, 1\n    muli r5, r4, " << a_buf << "\n"
    << "    muli r6, r4, " << b_buf << "\n    addi r6, r6, " << b_base << "\n    addi r7, r6, "
    << b_mxu << "\n"
    << "    bne r4, r0, odd_wait\n    wait seq, f0, " << kg + mxus << "\n    jmp waited\n"
    << "odd_wait:\n    wait seq, f1, " << kg + mxus << "\nwaited:\n"
    << "    li r11, MC\n    li r12, 0\n";
  for (int64_t j = 0; j < kg; ++j) {
    s << both("mxu.ldw m0, r6", "mxu.ldw m1, r7");
    if (j == 0)
      s << "    bne r3, r0, acc\n"
        << both("mxu.mm m0, r5, r11, r12", "mxu.mm m1, r5, r11, r12") << "    jmp issued\nacc:\n";
    s << both("mxu.mma m0, r5, r11, r12", "mxu.mma m1, r5, r11, r12");
    if (j == 0) s << "issued:\n";
    if (j + 1 < kg)
      s << "    addi r5, r5, " << a_sub << "\n    addi r6, r6, 0x8000\n    addi r7, r7, 0x8000\n";
  }
  s << "    bne r4, r0, odd_free\n"
    << both("signal mxu0, f2, 1", "signal mxu1, f2, 1") << "    jmp freed\n"
    << "odd_free:\n"
    << both("signal mxu0, f3, 1", "signal mxu1, f3, 1")
    << "freed:\n    addi r18, r18, 1\n    addi r3, r3, 1\n    li r13, " << kb
    << "\n    blt r3, r13, kblk\n"
    // Pop the accumulators and copy them out.
    << "    li r14, " << out_base << "\n    li r15, " << out_base + mc * 512 << "\n"
    << both("wait mxu0, f6, 1", "wait mxu1, f7, 1")
    << both("mxu.pop m0, r14, r12, r11", "mxu.pop m1, r15, r12, r11")
    << both("signal mxu0, f4, 1", "signal mxu1, f5, 1") << "    muli r16, r1, " << n * 4
    << "\n    shli r17, r2, 9\n    add r16, r16, r17\n"
    << "    add r16, r16, r26\n    addi r17, r16, " << half * 512 << "\n"
    << both("wait dma, f4, 1", "wait dma, f5, 1")
    << both("dma.vh r16, r14, cblk, f6", "dma.vh r17, r15, cblk, f7")
    << "    addi r2, r2, 1\n    li r13, " << half << "\n    blt r2, r13, cols\n"
    << "    addi r1, r1, MC\n    li r13, " << m << "\n    blt r1, r13, rows\n";
  if (shape.batch > 1)
    s << "    addi r24, r24, " << shape.a_stride << "\n    addi r25, r25, " << shape.b_stride
      << "\n    addi r26, r26, " << shape.c_stride << "\n    addi r28, r28, 1\n    li r13, "
      << shape.batch << "\n    blt r28, r13, batch\n";
  s << "    halt\n";
  return s.str();
}

}  // namespace tpusim::lowering
