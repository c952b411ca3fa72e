// The layouts a value's readers will take, looked up backwards from the stated shardings:
// XLA's sharding propagation runs both ways over the graph, so a sum that every reader
// meets in one tiled layout is partitioned into that layout (the partial sums of a weight
// gradient reduce-scattered into the shards its optimizer updates, not all-reduced whole
// and sliced). tpusim's rules run forward; this pass only tells them where a partial sum
// is headed (Combined).
#include <unordered_map>
#include <vector>

#include "compiler/spmd/annotations.h"
#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Opcode;

void Partitioner::FindReaderLayouts() {
  using Layouts = std::unordered_map<const HloInstruction*, HloSharding>;
  // Forward, as the rules will decide for 1-D tilings over every device: a parameter's stated
  // sharding; an elementwise op takes its operands' (OpRules: the most split operand); a
  // transpose moves the tiled dimension.
  Layouts forward;
  const auto& instrs = comp_->instructions();
  auto tiled_dim = [&](const Layouts& l, const HloInstruction* x) -> int64_t {
    auto it = l.find(x);
    return it == l.end() ? -1 : OneTiledDim(it->second);
  };
  for (const auto& owned : instrs) {
    const HloInstruction* i = owned.get();
    if (i->opcode() == Opcode::kParameter) {
      hlo::Result<std::optional<HloSharding>> s = StatedSharding(m_, *i);
      if (s.ok() && s.value() && OneTiledDim(**s) >= 0) forward[i] = **s;
    } else if (IsElementwiseOp(*i)) {
      for (const HloInstruction* o : i->operands())
        if (o->shape().dims == i->shape().dims && tiled_dim(forward, o) >= 0) {
          forward[i] = forward.at(o);
          break;
        }
    } else if (i->opcode() == Opcode::kTranspose && i->dimensions()) {
      const int64_t d = tiled_dim(forward, i->operand(0));
      const hlo::IntList& perm = *i->dimensions();
      for (size_t k = 0; d >= 0 && k < perm.size(); ++k)
        if (perm[k] == d) forward[i] = Tiled1D(perm.size(), k);
    }
  }
  // Backward: a value whose every reader is elementwise on its shape, or a transpose, and
  // ends (forward) or is wanted (backward) in one tiled layout, is wanted in that layout.
  std::unordered_map<const HloInstruction*, std::vector<const HloInstruction*>> users;
  for (const auto& owned : instrs)
    for (const HloInstruction* o : owned->operands()) users[o].push_back(owned.get());
  for (auto it = instrs.rbegin(); it != instrs.rend(); ++it) {
    const HloInstruction* i = it->get();
    if (!i->shape().IsArray() || i == comp_->root()) continue;
    std::optional<HloSharding> want;
    bool agree = !users[i].empty();
    for (const HloInstruction* u : users[i]) {
      std::optional<HloSharding> t;
      const Layouts* from = forward.count(u) ? &forward : wanted_.count(u) ? &wanted_ : nullptr;
      if (from && IsElementwiseOp(*u) && u->shape().dims == i->shape().dims) {
        t = from->at(u);
      } else if (from && u->opcode() == Opcode::kTranspose && u->dimensions()) {
        const int64_t k = tiled_dim(*from, u);
        if (k >= 0) t = Tiled1D(i->shape().dims.size(), (*u->dimensions())[k]);
      }
      if (!t || (want && !(*want == *t))) {
        agree = false;
        break;
      }
      want = t;
    }
    if (agree && want) wanted_[i] = *want;
  }
}

}  // namespace tpusim::spmd
