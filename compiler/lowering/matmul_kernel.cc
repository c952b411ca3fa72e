#include "compiler/lowering/matmul_kernel.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/lowering/asm_util.h"

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
  const int64_t kb = k / 128, half = n / (128 * mxus);  // column blocks per MXU
  // VMEM: A buffers 2 x mc*256 B; B tiles 2 buffers x 2 MXUs x 32 KiB; output 2 x mc*512 B.
  const int64_t a_buf = mc * 256, b_base = 2 * a_buf, out_base = b_base + 4 * 0x8000;
  auto both = [&](const std::string& m0, const std::string& m1) {  // MXU0's line, MXU1's
    return "    " + m0 + "\n" + (mxus == 2 ? "    " + m1 + "\n" : "");
  };
  std::ostringstream s;
  s << "# matmul C[" << m << "," << n << "] = A[" << m << "," << k << "] x B[" << k << "," << n
    << "] on " << mxus << " MXU(s) (compiler/lowering/matmul_kernel.cc)\n"
    << ".desc ablk rows=" << mc << " row_bytes=256 src_stride=" << k * 2 << " dst_stride=256\n"
    << ".desc btile rows=128 row_bytes=256 src_stride=" << n * 2 << " dst_stride=256\n"
    << ".desc cblk rows=" << mc << " row_bytes=512 src_stride=512 dst_stride=" << n * 4 << "\n"
    << ".equ MC " << mc << "\n"
    << ".tag \"" << shape.tag << "\"\n"
    << LoadAddress(24, shape.a, 27) << LoadAddress(25, shape.b, 27)
    << LoadAddress(26, shape.c, 27)
    // f0/f1: buffer b loaded (1 + mxus copies); f2/f3: buffer b free (one per MXU);
    // f4/f5: MXU0/1 popped; f6/f7: output buffer of MXU0/1 free.
    << "    sflag f2, " << mxus << "\n    sflag f3, " << mxus << "\n    sflag f6, 1\n"
    << "    sflag f7, 1\n    li r28, 0\nbatch:\n"
    << "    li r1, 0\n"         // r1 = row chunk start
    << "rows:\n    li r2, 0\n"  // r2 = column block of MXU0; MXU1 takes r2 + half
    << "cols:\n    li r3, 0\n"  // r3 = k block
    << "kblk:\n"
    << "    andi r4, r3, 1\n"                                           // buffer of this step
    << "    muli r5, r4, " << a_buf << "\n"                             // VMEM A buffer
    << "    muli r6, r4, 0x10000\n    addi r6, r6, " << b_base << "\n"  // VMEM B tiles
    << "    addi r7, r6, 0x8000\n"
    << "    muli r8, r1, " << k * 2 << "\n    shli r9, r3, 8\n    add r8, r8, r9\n"
    << "    add r8, r8, r24\n"  // HBM A block
    << "    muli r9, r3, " << 128 * n * 2 << "\n    shli r10, r2, 8\n    add r9, r9, r10\n"
    << "    add r9, r9, r25\n"  // HBM B tile
    << "    addi r10, r9, " << half * 256 << "\n";
  for (int buf = 0; buf < 2; ++buf) {
    s << (buf == 0 ? "    bne r4, r0, odd_load\n" : "odd_load:\n") << "    wait dma, f" << 2 + buf
      << ", " << mxus << "\n    dma.hv r5, r8, ablk, f" << buf << "\n"
      << both("dma.hv r6, r9, btile, f" + std::to_string(buf),
              "dma.hv r7, r10, btile, f" + std::to_string(buf))
      << "    wait seq, f" << buf << ", " << 1 + mxus << "\n"
      << (buf == 0 ? "    jmp loaded\n" : "");
  }
  s << "loaded:\n    li r11, MC\n    li r12, 0\n"
    << both("mxu.ldw m0, r6", "mxu.ldw m1, r7") << "    bne r3, r0, acc\n"
    << both("mxu.mm m0, r5, r11, r12", "mxu.mm m1, r5, r11, r12") << "    jmp issued\n"
    << "acc:\n"
    << both("mxu.mma m0, r5, r11, r12", "mxu.mma m1, r5, r11, r12")
    << "issued:\n    bne r4, r0, odd_free\n"
    << both("signal mxu0, f2, 1", "signal mxu1, f2, 1") << "    jmp freed\n"
    << "odd_free:\n"
    << both("signal mxu0, f3, 1", "signal mxu1, f3, 1")
    << "freed:\n    addi r3, r3, 1\n    li r13, " << kb
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
