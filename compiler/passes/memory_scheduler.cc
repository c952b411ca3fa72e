// The list scheduler; see memory_scheduler.h.
#include "compiler/passes/memory_scheduler.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/passes/layout.h"
#include "compiler/passes/memory.h"
#include "compiler/spmd/annotations.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// Work whose order other cores or later steps may see: it keeps its relative order.
bool IsOrdered(const HloInstruction& i) {
  const hlo::OpCategory c = hlo::GetOpcodeInfo(i.opcode()).category;
  return c == hlo::OpCategory::kCollective || c == hlo::OpCategory::kControl ||
         i.opcode() == Opcode::kRng || i.opcode() == Opcode::kRngBitGenerator ||
         i.opcode() == Opcode::kCustomCall;
}

// The list schedule of `c`: indices into its instructions.
std::vector<HloInstruction*> ListSchedule(const HloComputation& c) {
  const auto& instrs = c.instructions();
  const size_t n = instrs.size();
  std::unordered_map<const HloInstruction*, size_t> pos;
  for (size_t k = 0; k < n; ++k) pos[instrs[k].get()] = k;
  // The buffers (defining instructions) each instruction's value lives in, and per buffer
  // the instructions that read it, directly or through an alias.
  std::vector<std::vector<size_t>> owners(n), readers(n);
  std::vector<int64_t> bytes(n, 0);
  std::vector<bool> kept(n, false);  // parameters, constants, the result: live throughout
  for (size_t k = 0; k < n; ++k) {
    const HloInstruction& i = *instrs[k];
    if (LivesInOperandBuffers(i)) {
      for (const HloInstruction* o : i.operands())
        for (size_t b : owners[pos.at(o)]) owners[k].push_back(b);
    } else {
      owners[k] = {k};
      bytes[k] = LogicalBytes(i.shape());
      kept[k] = i.opcode() == Opcode::kParameter || i.opcode() == Opcode::kConstant;
    }
  }
  for (size_t b : owners[pos.at(c.root())]) kept[b] = true;
  std::vector<std::vector<size_t>> reads(n);  // the buffers each instruction reads
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> waiting(n, 0);  // operands (and ordering edges) not yet scheduled
  size_t last_ordered = n;
  for (size_t k = 0; k < n; ++k) {
    const HloInstruction& i = *instrs[k];
    std::vector<size_t> deps;
    for (const HloInstruction* o : i.operands()) deps.push_back(pos.at(o));
    if (IsOrdered(i)) {
      if (last_ordered < n) deps.push_back(last_ordered);
      last_ordered = k;
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (size_t d : deps) users[d].push_back(k);
    waiting[k] = deps.size();
    if (!LivesInOperandBuffers(i))
      for (const HloInstruction* o : i.operands())
        for (size_t b : owners[pos.at(o)]) reads[k].push_back(b);
    std::sort(reads[k].begin(), reads[k].end());
    reads[k].erase(std::unique(reads[k].begin(), reads[k].end()), reads[k].end());
    for (size_t b : reads[k]) readers[b].push_back(k);
  }
  std::vector<size_t> left(n);  // unscheduled readers per buffer
  for (size_t b = 0; b < n; ++b) left[b] = readers[b].size();
  std::vector<bool> done(n, false);
  // Net bytes freed by scheduling k now: kept buffers never go, and count nothing as they
  // are live throughout (so parameters come first, in order).
  auto gain = [&](size_t k) {
    int64_t g = kept[k] ? 0 : -bytes[k];
    for (size_t b : reads[k])
      if (!kept[b] && left[b] == 1) g += bytes[b];
    return g;
  };
  std::set<std::pair<int64_t, size_t>> ready;  // (-gain, position)
  std::vector<int64_t> key(n, 0);
  auto push = [&](size_t k) { ready.insert({key[k] = -gain(k), k}); };
  for (size_t k = 0; k < n; ++k)
    if (!waiting[k]) push(k);
  std::vector<HloInstruction*> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t k = ready.begin()->second;
    ready.erase(ready.begin());
    done[k] = true;
    order.push_back(instrs[k].get());
    for (size_t b : reads[k]) {
      if (--left[b] != 1) continue;
      for (size_t r : readers[b]) {  // the last reader now frees b: its gain rises
        if (done[r] || waiting[r]) continue;
        ready.erase({key[r], r});
        push(r);
      }
    }
    for (size_t u : users[k])
      if (--waiting[u] == 0) push(u);
  }
  return order;
}

// XLA's DFSMemoryScheduler: a post-order walk from the result whose operands are visited
// largest subgraph first (bytes defined below them, shared ones counted once per path), so a
// big subexpression is finished and freed before a small one starts (the sums saturate at
// 2^62: a graph of shared subexpressions doubles them per level); ordered work keeps its
// order (each depends on the one before).
std::vector<HloInstruction*> DfsSchedule(const HloComputation& c) {
  constexpr int64_t kTotalCap = int64_t{1} << 62;
  const auto& instrs = c.instructions();
  const size_t n = instrs.size();
  std::unordered_map<const HloInstruction*, size_t> pos;
  for (size_t k = 0; k < n; ++k) pos[instrs[k].get()] = k;
  std::vector<std::vector<size_t>> deps(n);
  std::vector<int64_t> total(n, 0);
  size_t last_ordered = n;
  for (size_t k = 0; k < n; ++k) {
    const HloInstruction& i = *instrs[k];
    for (const HloInstruction* o : i.operands()) deps[k].push_back(pos.at(o));
    if (IsOrdered(i)) {
      if (last_ordered < n) deps[k].push_back(last_ordered);
      last_ordered = k;
    }
    total[k] = LivesInOperandBuffers(i) ? 0 : LogicalBytes(i.shape());
    for (size_t d : deps[k])  // shared subgraphs count once per path: saturate
      total[k] = total[d] > kTotalCap - total[k] ? kTotalCap : total[k] + total[d];
    std::stable_sort(deps[k].begin(), deps[k].end(),
                     [&](size_t a, size_t b) { return total[a] > total[b]; });
  }
  std::vector<HloInstruction*> order;
  std::vector<bool> seen(n, false);
  // Iterative post-order: (instruction, next operand to visit).
  auto visit = [&](size_t start) {
    if (seen[start]) return;
    std::vector<std::pair<size_t, size_t>> stack = {{start, 0}};
    seen[start] = true;
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      if (next < deps[k].size()) {
        const size_t d = deps[k][next++];
        if (!seen[d]) seen[d] = true, stack.push_back({d, 0});
        continue;
      }
      order.push_back(instrs[k].get());
      stack.pop_back();
    }
  };
  for (size_t k = 0; k < n; ++k)  // parameters first, in order, as they are live anyway
    if (instrs[k]->opcode() == Opcode::kParameter) visit(k);
  visit(pos.at(c.root()));
  for (size_t k = 0; k < n; ++k) visit(k);  // anything the result does not need
  return order;
}

}  // namespace

hlo::Result<bool> MemorySchedulerPass::Run(hlo::HloModule& module) {
  HloComputation* entry = module.entry();
  if (!entry || spmd::IsScheduled(module)) return false;
  before_ = after_ = PlanMemory(module).peak_bytes;
  std::vector<HloInstruction*> given;
  for (const auto& i : entry->instructions()) given.push_back(i.get());
  std::vector<HloInstruction*> best = given;
  for (const std::vector<HloInstruction*>& order : {ListSchedule(*entry), DfsSchedule(*entry)}) {
    if (order == given || !entry->Reorder(order)) continue;
    const int64_t peak = PlanMemory(module).peak_bytes;
    if (peak < after_) after_ = peak, best = order;
  }
  entry->Reorder(best);
  return best != given;
}

}  // namespace tpusim::passes
