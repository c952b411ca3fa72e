// Ops that run a computation on their operands: a fusion's body is partitioned for its
// operands' layouts when it needs no collective inside (a reduction over a tiled dimension
// at its root is all-reduced after the fusion); a while loop's body and condition are
// partitioned for the layout of the state it is given, the body's result put back in that
// layout and the condition's made whole.
#include <memory>
#include <string>
#include <unordered_map>

#include "compiler/passes/ir_edit.h"
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

namespace {

// A copy of the global computation `name` (its instructions and root before partitioning):
// a loop whose body or condition another loop shares is partitioned on its own copy, as the
// layouts of the two states may differ.
hlo::HloComputation* Copy(hlo::HloModule& m, const std::string& name,
                          const std::vector<const HloInstruction*>& global,
                          const HloInstruction* root) {
  auto copy = std::make_unique<hlo::HloComputation>(passes::UniqueComputationName(m, name));
  std::unordered_map<const HloInstruction*, HloInstruction*> now;
  for (const HloInstruction* i : global) {
    std::vector<HloInstruction*> ops;
    for (const HloInstruction* o : i->operands()) ops.push_back(now.at(o));
    now[i] = copy->AddInstruction(passes::CloneWithOperands(*i, i->name(), ops));
  }
  copy->set_root(now.at(root));
  return m.AddComputation(std::move(copy));
}

// The while `w` (a clone in the entry) runs `c` as its `key` computation.
void Retarget(HloInstruction& w, const char* key, hlo::HloComputation* c) {
  hlo::ComputationRefs refs;
  refs.names = {c->name()};
  refs.computations = {c};
  w.SetAttr(key, refs);
}

}  // namespace

Result<std::optional<Local>> Partitioner::WhileRule(const HloInstruction& i) {
  const Local& state = Of(i.operand(0));
  hlo::HloComputation *body = i.body(), *cond = i.condition();
  if (state.manual() || !body || !cond || body == cond) return kNone;
  if (const auto it = globals_.find(body); it != globals_.end()) {
    body = Copy(m_, body->name(), it->second.instructions, it->second.root);
  }
  if (const auto it = globals_.find(cond); it != globals_.end()) {
    cond = Copy(m_, cond->name(), it->second.instructions, it->second.root);
  }
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
  HloInstruction* w = Clone(i, state.value->shape(), {state.value});
  if (body != i.body()) Retarget(*w, "body", body);
  if (cond != i.condition()) Retarget(*w, "condition", cond);
  return std::optional<Local>(Local{w, state.sharding});
}

}  // namespace tpusim::spmd
