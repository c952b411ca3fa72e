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

// The largest sum of live buffers over `order` (a cheap bound of what the plan needs, to
// rank the schedules): each buffer from its definition (parameters from the start) to its
// last reader, through aliases; the result's buffers to the end.
int64_t LivePeak(const HloComputation& c, const std::vector<HloInstruction*>& order) {
  const size_t n = order.size();
  std::unordered_map<const HloInstruction*, std::vector<const HloInstruction*>> owners;
  std::unordered_map<const HloInstruction*, size_t> at, last;
  for (size_t k = 0; k < n; ++k) {
    const HloInstruction* i = order[k];
    at[i] = k;
    if (LivesInOperandBuffers(*i)) {
      for (const HloInstruction* o : i->operands())
        for (const HloInstruction* b : owners[o]) owners[i].push_back(b);
      continue;
    }
    owners[i] = {i};
    for (const HloInstruction* o : i->operands())
      for (const HloInstruction* b : owners[o]) last[b] = k;
  }
  for (const HloInstruction* b : owners[c.root()]) last[b] = n - 1;
  std::vector<int64_t> delta(n + 1, 0);
  for (const HloInstruction* i : order) {
    if (LivesInOperandBuffers(*i)) continue;
    const bool whole = i->opcode() == Opcode::kParameter;
    const size_t start = whole ? 0 : at.at(i);
    const auto it = last.find(i);
    const size_t end = whole ? n - 1 : std::max(start, it == last.end() ? start : it->second);
    const int64_t bytes = PaddedBytes(i->shape());
    delta[start] += bytes, delta[end + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (size_t k = 0; k < n; ++k) peak = std::max(peak, live += delta[k]);
  return peak;
}

}  // namespace

hlo::Result<bool> MemorySchedulerPass::Run(hlo::HloModule& module) {
  HloComputation* entry = module.entry();
  if (!entry || spmd::IsScheduled(module)) return false;
  std::vector<HloInstruction*> given;
  for (const auto& i : entry->instructions()) given.push_back(i.get());
  // Ranked by the live bound; the best is kept only if the plan itself needs less.
  std::vector<HloInstruction*> best = given;
  int64_t best_live = LivePeak(*entry, given);
  for (std::vector<HloInstruction*> order : {ListSchedule(*entry), DfsSchedule(*entry)}) {
    if (order.size() != given.size() || order == given) continue;
    const int64_t live = LivePeak(*entry, order);
    if (live < best_live) best_live = live, best = std::move(order);
  }
  if (best == given) return false;
  before_ = after_ = PlanMemory(module).peak_bytes;
  if (!entry->Reorder(best)) return false;
  const int64_t peak = PlanMemory(module).peak_bytes;
  if (peak < before_) {
    after_ = peak;
    return true;
  }
  entry->Reorder(given);
  return false;
}

}  // namespace tpusim::passes
