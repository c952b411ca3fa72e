// How a while body hands its result back to the loop state (lower.cc). The state is one
// buffer per element of the while's tuple; the body reads it through its parameter. Element k
// of the body's root is either the state's element k passed through (nothing to do),
// computed straight into the state (when nothing reads that element at or after the op that
// computes it), or copied into the state after the whole body ran (XLA's semantics: the body
// reads the state of the iteration before, whatever order it computes in).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::lowering {

struct RootElement {
  const hlo::HloInstruction* value = nullptr;  // the op computing it (after tuples, bitcasts)
  int64_t value_element = 0;                   // of that op's (tuple) result
  int64_t state_element = -1;                  // >= 0: the value is this element of the state
  bool in_place = false;                       // the op may write state element k itself
};

// One entry per element of the body's result (its parameter's shape).
std::vector<RootElement> BodyRootElements(const hlo::HloComputation& body);

}  // namespace tpusim::lowering
