// When the interpreter may drop a computation's values or move them instead of copying.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/ir.h"

namespace tpusim::eval {

struct Lifetimes {
  // Per instruction (by position): the position of its last user; the root's is past the end,
  // an unused value's is its own.
  std::vector<size_t> last_use;
  // Per instruction: a get-tuple-element that may move its element out of its tuple (every
  // user of the tuple is a get-tuple-element, no other one reads that index, and the tuple
  // is not the root).
  std::vector<bool> takes_element;
};

Lifetimes PlanLifetimes(const hlo::HloComputation& comp,
                        const std::unordered_map<const hlo::HloInstruction*, size_t>& position);

}  // namespace tpusim::eval
