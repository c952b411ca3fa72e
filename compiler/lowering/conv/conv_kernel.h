// The MXU kernel the compiler lowers a 2-D convolution to, as implicit GEMM on one core:
// for each kernel tap (dy, dx), rows of output pixels x [cin, cout] weights accumulate in
// the MXU accumulators, reading the input pixels straight from VMEM (no im2col copy).
// docs/compiler.md, section "Convolution on the MXU", describes the tiling.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::lowering {

struct ConvShape {  // NHWC input, HWIO kernel, NHWC output, one core's share
  int64_t batch = 0, h = 0, w = 0, cin = 0, cout = 0, kh = 1, kw = 1;
  int64_t stride = 1, pad_lo = 0, pad_hi = 0;  // same in both spatial dims
  uint64_t input = 0, kernel = 0, output = 0;  // HBM addresses; output f32 or bf16
  // f32 operands are read as f32 and rounded to bf16 in VMEM by the VPU (one MXU pass, as
  // DEFAULT precision); else they are bf16 in HBM.
  bool input_f32 = false, kernel_f32 = false;
  bool kernel_oi = false;    // kernel stored [kh][kw][cout][cin] (01oi), else [kh][kw][cin][cout]
  bool output_bf16 = false;  // the VPU rounds the popped f32 results to bf16 before they go out
  // Batch-norm statistics of the output (bf16 output only): per output channel, the f32 sum
  // of the rounded results and of their squares, to HBM f32[cout] vectors at `sum` and
  // `sum_squares` (XLA's multi-output fusion of a convolution with reductions of its result).
  bool statistics = false;
  uint64_t sum = 0, sum_squares = 0;
  std::string tag;  // HLO op name for the profiler
  int mxus = 2;
  // The core's resources (sim::CoreConfig vmem_bytes, smem_bytes, mxu_result_buffer_rows);
  // the defaults are TPU v3's. The kernel plans its buffers and tables within them.
  int64_t vmem_bytes = int64_t{16} << 20;
  int64_t smem_bytes = int64_t{16} << 10;
  int64_t acc_rows = 4096;
};

// Output spatial size: (h + pad_lo + pad_hi - kh) / stride + 1 (the same for w).
int64_t ConvOutputSize(const ConvShape& shape);

// ISA assembly for one core (flags f0..f8, SMEM and VMEM from address 0; ends in halt).
// Throws std::invalid_argument, saying why, for shapes it does not support.
std::string ConvKernel(const ConvShape& shape);

// 2 * batch * oh * ow * kh * kw * cin * cout: the convolution's useful flops.
int64_t ConvFlops(const ConvShape& shape);

}  // namespace tpusim::lowering
