// The module of one weight gradient (`f01b_i01o->01bf`, f32 dW) on every replica, shared by
// the value tests of the two weight-gradient kernels.
#pragma once

#include <string>

namespace tpusim::testing {

inline std::string WeightGradModule(const std::string& x, const std::string& dy,
                                    const std::string& dw, const std::string& window) {
  return "HloModule m, replica_count=8\nENTRY %main (x: " + x + ", dy: " + dy + ") -> " + dw +
         " {\n  %x = " + x + " parameter(0)\n  %dy = " + dy + " parameter(1)\n  ROOT %w = " + dw +
         " convolution(%x, %dy), window={" + window + "}, dim_labels=f01b_i01o->01bf\n}\n";
}

}  // namespace tpusim::testing
