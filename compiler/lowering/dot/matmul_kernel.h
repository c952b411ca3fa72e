// The MXU kernel the compiler lowers a dot to: C[M,N] f32 = A[M,K] bf16 x B[K,N] bf16 on
// one core with both MXUs. Rows go in passes of up to 2048 (the accumulators), column
// blocks of 128 are split between the two MXUs, and A/B blocks are double-buffered
// through VMEM by DMA while the MXUs stream. A, B and C are row-major in HBM.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::lowering {

struct MatmulShape {
  int64_t m = 0, k = 0, n = 0;   // m: multiple of 8 (of 2048 above 2048); k: of 128; n: of 256
  uint64_t a = 0, b = 0, c = 0;  // HBM addresses
  std::string tag;               // the HLO op the instructions come from
  int mxus = 2;                  // MXUs per core (v3: 2, v2: 1)
  int64_t rows_per_pass = 0;     // accumulator rows per pass (<= 2048, divides m); 0: min(m, 2048)
  int64_t batch = 1;             // independent matmuls, each `*_stride` bytes after the last
  uint64_t a_stride = 0, b_stride = 0, c_stride = 0;
};

// Throws std::invalid_argument for shapes the kernel does not tile. Addresses may lie
// anywhere in HBM (they are built in registers r24..r26).
std::string MatmulKernel(const MatmulShape& shape);

// The square N^3 kernel of the benchmarks: A at 0, B at N*N*2, C at 2*N*N*2.
inline std::string MatmulKernel(int64_t n) {
  return MatmulKernel(MatmulShape{n, n, n, 0, static_cast<uint64_t>(n * n * 2),
                                  static_cast<uint64_t>(2 * n * n * 2), "matmul", 2});
}

}  // namespace tpusim::lowering
