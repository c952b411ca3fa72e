// Asynchronous collectives; see async_collectives.h.
#include "compiler/passes/async_collectives.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/analysis/cost_analysis.h"
#include "compiler/passes/ir_edit.h"
#include "compiler/passes/layout.h"
#include "compiler/passes/memory.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// Work other than collectives whose order later steps may see (random state, side effects,
// control flow that may hold them): it keeps its relative order.
bool KeepsOrder(const HloInstruction& i) {
  switch (i.opcode()) {
    case Opcode::kCall:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kRng:
    case Opcode::kRngBitGenerator:
    case Opcode::kCustomCall:
      return true;
    default:
      return false;
  }
}

// Whether every collective of `m` is an instruction of its entry computation.
bool CollectivesOnlyInEntry(const hlo::HloModule& m) {
  for (const HloComputation* c : KernelComputations(m)) {
    if (c == m.entry()) continue;
    for (const auto& i : c->instructions())
      if (hlo::IsCollective(i->opcode())) return false;
  }
  return true;
}

// An all-gather or reduce-scatter of one array among groups of several cores (XLA's starts
// hold the operand and the result as a tuple; the done is the result).
bool AsyncRingCollective(const HloInstruction& i) {
  if ((i.opcode() != Opcode::kAllGather && i.opcode() != Opcode::kReduceScatter) ||
      i.operand_count() != 1 || i.shape().IsTuple() || i.operand(0)->shape().IsTuple())
    return false;
  if (const hlo::ReplicaGroups* g = i.replica_groups())
    for (const auto& group : g->groups)
      if (group.size() == 1) return false;
  return true;
}

bool MadeAsync(const HloInstruction& i) {
  return i.opcode() == Opcode::kAllReduce || AsyncRingCollective(i);
}

// The start of `i` and its done's opcode: all-reduce-start returns the result,
// all-gather-start (operand, result), reduce-scatter-start XLA's async wrapper's
// ((operand), result).
struct AsyncForm {
  Opcode start, done;
  hlo::Shape shape;
};
AsyncForm FormOf(const HloInstruction& i) {
  const hlo::Shape& in = i.operand(0)->shape();
  switch (i.opcode()) {
    case Opcode::kAllGather:
      return {Opcode::kAllGatherStart, Opcode::kAllGatherDone, hlo::Shape::Tuple({in, i.shape()})};
    case Opcode::kReduceScatter:
      return {Opcode::kReduceScatterStart, Opcode::kReduceScatterDone,
              hlo::Shape::Tuple({hlo::Shape::Tuple({in}), i.shape()})};
    default:
      return {Opcode::kAllReduceStart, Opcode::kAllReduceDone, i.shape()};
  }
}

// Each all-reduce, all-gather and reduce-scatter of the entry becomes a start and a done
// right after it.
hlo::Status MakePairs(hlo::HloModule& module) {
  HloComputation* entry = module.entry();
  ModuleEdits edits;
  std::vector<std::string> order;
  std::vector<const HloInstruction*> given;  // AddInstruction below grows the list
  for (const auto& i : entry->instructions()) given.push_back(i.get());
  for (const HloInstruction* owned : given) {
    const HloInstruction& ar = *owned;
    order.push_back(ar.name());
    if (!MadeAsync(ar)) continue;
    const AsyncForm form = FormOf(ar);
    auto start = std::make_unique<HloInstruction>(ar.name(), form.start, form.shape);
    start->mutable_attributes() = ar.attributes();
    for (HloInstruction* o : ar.operands()) start->AddOperand(o);
    HloInstruction* s = entry->AddInstruction(std::move(start));
    HloInstruction* done = AddNew(*entry, ar.name() + ".done", form.done, ar.shape(), {s});
    order.push_back(done->name());
    edits.replace[&ar] = done;
    edits.remove.insert(&ar);
  }
  if (hlo::Status st = ApplyEdits(module, edits); !st.ok()) return st;
  std::unordered_map<std::string, HloInstruction*> by_name;
  for (const auto& i : module.entry()->instructions()) by_name[i->name()] = i.get();
  std::vector<HloInstruction*> schedule;
  for (const std::string& name : order) schedule.push_back(by_name.at(name));
  if (!module.entry()->Reorder(schedule))
    return hlo::Status::Error("async-collective-creator: the schedule lost an instruction");
  return hlo::Status::Ok();
}

// The bytes of every array in `s`, padded as HBM holds them.
double ArrayBytes(const hlo::Shape& s) {
  if (!s.IsTuple()) return static_cast<double>(PaddedBytes(s));
  double b = 0;
  for (const hlo::Shape& e : s.tuple_shapes) b += ArrayBytes(e);
  return b;
}

// Estimated seconds of `i` on one core: a start its ring's, a kernel its roofline (model FLOPs
// at peak or its operands and result through HBM), what emits no code nothing.
double EstimatedSeconds(const HloInstruction& i, const collectives::RingCostModel& m) {
  if (!m.known()) return 0;
  switch (i.opcode()) {
    case Opcode::kAllReduceStart:
      return collectives::RingAllReduceSeconds(ArrayBytes(i.shape()), m);
    case Opcode::kAllGatherStart:
      return collectives::RingAllGatherSeconds(ArrayBytes(i.shape().tuple_shapes.back()), m);
    case Opcode::kReduceScatterStart:
      return collectives::RingReduceScatterSeconds(ArrayBytes(i.operand(0)->shape()), m);
    case Opcode::kParameter:
    case Opcode::kConstant:
      return 0;
    default:
      break;
  }
  if (LivesInOperandBuffers(i) || hlo::IsAsyncCollectiveDone(i.opcode())) return 0;
  double bytes = ArrayBytes(i.shape());
  for (const HloInstruction* o : i.operands()) bytes += ArrayBytes(o->shape());
  return std::max(analysis::CostOf(i).flops / m.peak_flops_per_s, bytes / m.hbm_bytes_per_s);
}

// The latency-hiding order (async_collectives.h): a list schedule that takes, of the ready
// instructions, a start first; then the done in flight if another start is ready and the
// work taken since its start covers its estimated time; then the work a start still waits
// for (of the start nearest to ready); then other work in the given order; a done only when
// nothing else is ready. One collective is in flight at a time (XLA's SchedulerConfig's
// all_reduce_overlap_limit and all_gather_overlap_limit, 1 by default; the collective stream
// runs one at a time anyway), and a synchronous collective waits for it as a start does.
std::vector<HloInstruction*> LatencyHidingOrder(const HloComputation& entry,
                                                const collectives::RingCostModel& costs) {
  std::vector<HloInstruction*> instrs;
  for (const auto& i : entry.instructions()) instrs.push_back(i.get());
  const size_t n = instrs.size();
  std::unordered_map<const HloInstruction*, size_t> pos;
  for (size_t k = 0; k < n; ++k) pos[instrs[k]] = k;
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> waiting(n, 0);  // unscheduled distinct predecessors
  size_t last_kept = n;
  for (size_t k = 0; k < n; ++k) {
    std::set<size_t> preds;
    for (const HloInstruction* o : instrs[k]->operands()) preds.insert(pos.at(o));
    if (KeepsOrder(*instrs[k])) {
      if (last_kept < n) preds.insert(last_kept);
      last_kept = k;
    }
    for (size_t p : preds) users[p].push_back(k);
    waiting[k] = preds.size();
  }
  // For each instruction, the starts it is an ancestor of; per start, its unscheduled ancestors.
  std::vector<size_t> starts;
  for (size_t k = 0; k < n; ++k)
    if (hlo::IsAsyncCollectiveStart(instrs[k]->opcode())) starts.push_back(k);
  std::vector<std::vector<size_t>> feeds(n);  // start numbers
  std::vector<size_t> remaining(starts.size(), 0);
  for (size_t s = 0; s < starts.size(); ++s) {
    std::vector<bool> seen(n, false);
    std::vector<size_t> stack{starts[s]};
    while (!stack.empty()) {
      const size_t k = stack.back();
      stack.pop_back();
      for (const HloInstruction* o : instrs[k]->operands())
        if (const size_t p = pos.at(o); !seen[p]) {
          seen[p] = true;
          feeds[p].push_back(s);
          ++remaining[s];
          stack.push_back(p);
        }
    }
  }
  std::set<size_t> ready;
  for (size_t k = 0; k < n; ++k)
    if (waiting[k] == 0) ready.insert(k);
  std::vector<HloInstruction*> order;
  bool in_flight = false;
  double cover = 0;  // estimated seconds of the collective in flight not yet covered
  auto take = [&](size_t k) {
    ready.erase(k);
    order.push_back(instrs[k]);
    const Opcode op = instrs[k]->opcode();
    if (hlo::IsAsyncCollectiveStart(op)) {
      in_flight = true;
      cover = EstimatedSeconds(*instrs[k], costs);
    } else if (hlo::IsAsyncCollectiveDone(op)) {
      in_flight = false;
    } else {
      cover -= EstimatedSeconds(*instrs[k], costs);
    }
    for (size_t s : feeds[k]) --remaining[s];
    for (size_t u : users[k])
      if (--waiting[u] == 0) ready.insert(u);
  };
  while (!ready.empty()) {
    size_t pick = n, feeding = n, other = n, done = n;
    bool start_waits = false;
    for (size_t k : ready) {
      const HloInstruction& i = *instrs[k];
      if (hlo::IsAsyncCollectiveDone(i.opcode())) {
        done = std::min(done, k);
        continue;
      }
      start_waits = start_waits || hlo::IsAsyncCollectiveStart(i.opcode());
      if (hlo::IsCollective(i.opcode())) {
        if (!in_flight && hlo::IsAsyncCollectiveStart(i.opcode())) {
          pick = k;
          break;
        }
        if (in_flight) continue;  // waits for the collective in flight
      }
      if (!feeds[k].empty()) {
        auto nearest = [&](size_t x) {
          size_t best = SIZE_MAX;
          for (size_t s : feeds[x]) best = std::min(best, remaining[s]);
          return best;
        };
        if (feeding == n || nearest(k) < nearest(feeding)) feeding = k;
      }
      if (other == n) other = k;
    }
    // Covered, with the next collective waiting: done now, so that one starts.
    if (pick == n && done != n && start_waits && costs.known() && cover <= 0) pick = done;
    if (pick == n) pick = feeding != n ? feeding : other != n ? other : done;
    if (pick == n) break;  // only collectives waiting for a start no done will finish
    take(pick);
  }
  return order;
}

}  // namespace

hlo::Result<bool> AsyncCollectiveCreatorPass::Run(hlo::HloModule& module) {
  HloComputation* entry = module.entry();
  if (!entry || !CollectivesOnlyInEntry(module)) return false;
  if (std::none_of(entry->instructions().begin(), entry->instructions().end(),
                   [](const auto& i) { return MadeAsync(*i); }))
    return false;
  if (hlo::Status st = MakePairs(module); !st.ok()) return st;
  // Kept only where the plan still fits: else each done stays right after its start.
  std::vector<HloInstruction*> paired;
  for (const auto& i : module.entry()->instructions()) paired.push_back(i.get());
  std::vector<HloInstruction*> order = LatencyHidingOrder(*module.entry(), costs_);
  if (order.size() != paired.size() || !module.entry()->Reorder(order))
    return hlo::Status::Error("async-collective-creator: the schedule lost an instruction");
  if (PlanMemory(module).peak_bytes > capacity_) module.entry()->Reorder(paired);
  return true;
}

}  // namespace tpusim::passes
