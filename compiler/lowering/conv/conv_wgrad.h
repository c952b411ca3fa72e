// The MXU kernel of a convolution's weight gradient (XLA's `f01b_i01o->01bf` form, the
// window the size of the output gradient): dW[ky][kx][ci][co] = sum over b, y, x of
// X[b][d y + ky - pad][d x + kx - pad][ci] * dY[b][y][x][co] (X zero outside), on one core,
// bf16 operands, or f32 ones rounded to bf16; padding and dilation read in place. The work
// runs in passes of channel blocks that fit the accumulators.
// docs/compiler.md, section "Convolution weight gradients", describes the scheme.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::lowering {

struct WeightGradShape {
  int64_t batch = 0, h = 0, w = 0, cin = 0;  // X: f32[batch, h, w, cin] in HBM
  int64_t ho = 0, wo = 0, cout = 0;          // dY: f32[batch, ho, wo, cout]
  // X and dY bf16 in HBM (then cin and cout even: DMA moves 4-byte words); dW stays f32.
  bool bf16 = false;
  // 1x1 only: dW is written as [cout][cin], the transposed result (the emitter swaps X and
  // dY of a gradient with more output than input channel blocks: the kernel transposes
  // the dY side, so the side with fewer blocks is transposed and the result needs none).
  bool transposed_out = false;
  // Window dilation (the forward stride) and padding, the same in both spatial dimensions;
  // dW: f32[kh, kw, cin, cout], kh = h + pad_lo + pad_hi - (ho - 1) * dilation.
  int64_t dilation = 1, pad_lo = 0, pad_hi = 0;
  uint64_t x = 0, dy = 0, dw = 0;  // HBM
  std::string tag;
  int mxus = 2;
  int64_t vmem_bytes = int64_t{16} << 20;  // sim::CoreConfig vmem_bytes (TPU v3)
  int64_t acc_rows = 4096;                 // sim::CoreConfig mxu_result_buffer_rows
};

// ISA assembly for one core (flags f0..f7, VMEM from address 0; ends in halt). Throws
// std::invalid_argument, saying why, for shapes it does not support.
std::string WeightGradKernel(const WeightGradShape& shape);

// Plans `shape` without emitting code: throws as WeightGradKernel would, else returns.
void CheckWeightGradShape(const WeightGradShape& shape);

}  // namespace tpusim::lowering
