// Window iteration shared by reduce-window, select-and-scatter and convolution.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compiler/hlo/attributes.h"

namespace tpusim::eval {

// For output position `out` of a windowed op over an input of `in_dims`, calls
// fn(window_index, input_index) for every window element that lands on a real input
// element: input position = out*stride + k*window_dilation - pad_low in the base-dilated
// input; padding and the holes of base dilation are skipped. Windows walk in row-major order.
template <typename F>
void ForEachWindowInput(const hlo::Window& window, std::span<const int64_t> in_dims,
                        std::span<const int64_t> out, F fn) {
  size_t rank = in_dims.size();
  std::vector<int64_t> k(rank, 0), in(rank, 0);
  for (;;) {
    bool valid = true;
    for (size_t d = 0; d < rank && valid; ++d) {
      const hlo::WindowDim& w = window.dims[d];
      int64_t p = out[d] * w.stride + k[d] * w.rhs_dilate - w.pad_low;
      if (p < 0 || p % w.lhs_dilate != 0) valid = false;
      in[d] = p / w.lhs_dilate;
      if (in[d] >= in_dims[d]) valid = false;
    }
    if (valid) fn(k, in);
    size_t d = rank;
    for (; d > 0; --d) {
      if (++k[d - 1] < window.dims[d - 1].size) break;
      k[d - 1] = 0;
    }
    if (d == 0) return;
  }
}

}  // namespace tpusim::eval
