// All-reduce combining, as XLA's AllReduceCombiner: all-reduces of one reducer and one set
// of replica groups, none of which depends on another's result, become one all-reduce of a
// tuple of their operands; each is then a get-tuple-element of it, and the rebuilt program
// computes the combined one's operands before the first use of any of its results. One ring then
// carries all of them (the lowering's tuple all-reduce), paying the ring's latency once: the
// per-layer gradient all-reduces of a data-parallel step, a batch norm's sums and sums of squares.
#pragma once

#include <cstdint>

#include "compiler/passes/pass.h"

namespace tpusim::passes {

// XLA's combine threshold: operands of one combined all-reduce add up to at most this many
// bytes (xla_gpu_all_reduce_combine_threshold_bytes defaults to 30 MiB in XLA; the TPU
// compiler's value is not published).
inline constexpr int64_t kDefaultAllReduceCombineBytes = int64_t{30} << 20;

class AllReduceCombinerPass : public HloPass {
 public:
  explicit AllReduceCombinerPass(int64_t threshold_bytes = kDefaultAllReduceCombineBytes)
      : threshold_(threshold_bytes) {}
  std::string_view name() const override { return "all-reduce-combiner"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

 private:
  int64_t threshold_;
};

}  // namespace tpusim::passes
