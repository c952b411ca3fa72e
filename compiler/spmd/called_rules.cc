// Ops that run a computation on their operands: a fusion's body is partitioned for its
// operands' layouts when it needs no collective inside (a reduction over a tiled dimension
// at its root is all-reduced after the fusion); a while loop's body and condition are
// partitioned for the layout of the state it is given, the body's result put back in that
// layout and the condition's made whole.
#include "compiler/spmd/partitioner.h"

namespace tpusim::spmd {

using hlo::HloInstruction;
using hlo::HloSharding;
using hlo::Result;

namespace {
const Result<std::optional<Local>> kNone = std::optional<Local>();
}  // namespace

Result<std::optional<Local>> Partitioner::FusionRule(const HloInstruction& i) {
  hlo::HloComputation* body = i.fused_computation();
  if (!body) return kNone;
  std::vector<HloSharding> params;
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* o : i.operands()) {
    const Local& l = Of(o);
    if (l.manual()) return kNone;
    params.push_back(l.sharding);
    operands.push_back(l.value);
  }
  Result<std::optional<Local>> root = PartitionCalled(*body, params, /*pure=*/true, std::nullopt);
  if (!root.ok() || !root.value()) return root;
  const Local& r = **root;
  HloInstruction* f = Clone(i, r.value->shape(), operands);
  if (r.partial) return std::optional<Local>(Combined(f, r.partial));
  return std::optional<Local>(Local{f, r.sharding});
}

Result<std::optional<Local>> Partitioner::WhileRule(const HloInstruction& i) {
  const Local& state = Of(i.operand(0));
  hlo::HloComputation *body = i.body(), *cond = i.condition();
  if (state.manual() || !body || !cond || body == cond) return kNone;
  Result<std::optional<Local>> b = PartitionCalled(*body, {state.sharding}, false, state.sharding);
  if (!b.ok()) return b;
  if (!b.value())
    return hlo::Status::Error("%" + i.name() + ": its body %" + body->name() +
                              " also serves another loop");
  Result<std::optional<Local>> c =
      PartitionCalled(*cond, {state.sharding}, false, HloSharding::Replicated());
  if (!c.ok()) return c;
  if (!c.value())
    return hlo::Status::Error("%" + i.name() + ": its condition %" + cond->name() +
                              " also serves another loop");
  return std::optional<Local>(Local{Clone(i, state.value->shape(), {state.value}), state.sharding});
}

}  // namespace tpusim::spmd
