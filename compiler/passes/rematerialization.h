// Rematerialization, as XLA's HloRematerialization (openxla/xla
// `xla/service/hlo_rematerialization.cc`): when the entry computation's memory plan exceeds
// HBM, values are recomputed instead of being kept live. At the first point where the live
// buffers exceed the capacity, a value defined before that point and read again only after it
// is recomputed just before its next reader (a clone named `<value>.remat`, which the later
// readers take), so its buffer is free in between. Only values cheap to recompute qualify
// (elementwise ops, broadcasts, iota and data movement, loop fusions of those) whose operands
// are live at that point anyway, so no other buffer lives longer across it; of those, the one
// that moves the fewest bytes per byte freed (XLA's cost per byte of memory reduced). A module
// that fits is left alone; one that no choice of recomputations brings under the capacity too,
// and memory planning reports it as out of memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/passes/memory.h"
#include "compiler/passes/pass.h"

namespace tpusim::passes {

struct Recomputation {
  std::string value;   // the instruction recomputed
  std::string clone;   // its copy, `<value>.remat`
  std::string before;  // the reader the copy runs just before
  int64_t bytes = 0;   // the buffer freed in between (padded)
};

class RematerializationPass : public HloPass {
 public:
  explicit RematerializationPass(int64_t hbm_capacity_bytes = kDefaultHbmBytes)
      : capacity_(hbm_capacity_bytes) {}
  std::string_view name() const override { return "rematerialization"; }
  hlo::Result<bool> Run(hlo::HloModule& module) override;

  // What the last Run recomputed, in program order of the clones' readers per round.
  const std::vector<Recomputation>& recomputed() const { return recomputed_; }
  // HBM the plan needed before and after (equal when nothing was recomputed).
  int64_t peak_before() const { return before_; }
  int64_t peak_after() const { return after_; }

 private:
  int64_t capacity_;
  std::vector<Recomputation> recomputed_;
  int64_t before_ = 0, after_ = 0;
};

}  // namespace tpusim::passes
