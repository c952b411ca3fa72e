// Ops that run a computation on their operands: a fusion's body is partitioned for its
// operands' layouts when it needs no collective inside (a reduction over a tiled dimension
// at its root is all-reduced after the fusion); a while loop's body and condition are
// partitioned for the layout of the state it is given, the body's result put back in that
// layout and the condition's made whole. A computation another op already had partitioned
// is partitioned again on a copy of its global form (HLO lets ops share computations).
#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Result;

namespace {

// The op `w` (a clone in the entry) runs `c` as its `key` computation.
void Retarget(HloInstruction& w, const char* key, hlo::HloComputation* c) {
  hlo::ComputationRefs refs;
  refs.names = {c->name()};
  refs.computations = {c};
  w.SetAttr(key, refs);
}

}  // namespace

Rule Partitioner::FusionRule(const HloInstruction& i) {
  hlo::HloComputation* body = i.fused_computation();
  if (!body) return NoRule();
  std::vector<HloSharding> params;
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* o : i.operands()) {
    const Local& l = Of(o);
    if (l.manual()) return NoRule();
    params.push_back(l.sharding);
    operands.push_back(l.value);
  }
  Rule root = PartitionCalled(body, params, /*pure=*/true, std::nullopt);
  if (!root.ok()) return root;
  if (!root.value()) {  // needs a collective: replicated, on the global form of its body
    if (body == i.fused_computation()) return NoRule();
    hlo::Result<Local> whole = Replicated(i);  // the original body is another fusion's now
    if (!whole.ok()) return whole.status();
    Retarget(*whole->value, "calls", body);
    return std::optional<Local>(whole.value());
  }
  const Local& r = **root;
  HloInstruction* f = Clone(i, r.value->shape(), operands);
  if (body != i.fused_computation()) Retarget(*f, "calls", body);
  if (r.partial) return std::optional<Local>(Combined(f, r.partial));
  return std::optional<Local>(Local{f, r.sharding});
}

Rule Partitioner::WhileRule(const HloInstruction& i) {
  const Local& state = Of(i.operand(0));
  hlo::HloComputation *body = i.body(), *cond = i.condition();
  if (state.manual() || !body || !cond || body == cond) return NoRule();
  if (Rule b = PartitionCalled(body, {state.sharding}, false, state.sharding); !b.ok()) return b;
  if (Rule c = PartitionCalled(cond, {state.sharding}, false, HloSharding::Replicated()); !c.ok())
    return c;
  HloInstruction* w = Clone(i, state.value->shape(), {state.value});
  if (body != i.body()) Retarget(*w, "body", body);
  if (cond != i.condition()) Retarget(*w, "condition", cond);
  return std::optional<Local>(Local{w, state.sharding});
}

}  // namespace tpusim::spmd
