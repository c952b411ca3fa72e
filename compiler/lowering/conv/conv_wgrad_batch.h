// The weight gradient contracting over the batch: XLA's `f01b_i01o->01bf` form makes the
// batch the convolution's input feature, so on the MXU one K tile is 128 images at one
// output-gradient pixel, full whatever the image size. dW^T[tap][cout][cin] accumulates
// dY^T(pixel) x X(pixel moved by the tap) over the pixels, taps that fall in the padding
// skipped. For 3x3 gradients of small images (ResNet's 7x7 and 14x14 stages), where the
// position-grid kernel of conv_wgrad.h fills a K tile with one or two padded images.
#pragma once

#include <string>

#include "compiler/lowering/conv/conv_wgrad.h"

namespace tpusim::lowering {

// Whether the batch kernel takes `shape`: bf16 operands, whole 128-image blocks per core,
// whole 128-channel blocks, a window larger than 1x1, and a plan that fits.
bool BatchWeightGradTakes(const WeightGradShape& shape);

// ISA assembly for one core (flags f0..f14, VMEM from address 0; ends in halt). Throws
// std::invalid_argument, saying why, for shapes it does not take.
std::string BatchWeightGradKernel(const WeightGradShape& shape);

}  // namespace tpusim::lowering
