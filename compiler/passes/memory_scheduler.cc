// The list and depth-first memory schedulers; see memory_scheduler.h.
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

// The entry's instructions as numbered nodes, shared by the schedules and the live sweep.
struct Graph {
  std::vector<HloInstruction*> instrs;  // in the given order
  // Operands, then the ordered instruction before (ordered work keeps its order); in
  // operand order, repeats included.
  std::vector<std::vector<size_t>> deps;
  // The buffers (defining instructions) each value lives in, through aliases; the buffers
  // each instruction reads (sorted, once each) and, per buffer, its readers.
  std::vector<std::vector<size_t>> owners, reads, readers;
  std::vector<int64_t> bytes;  // logical bytes each defines (0 for aliases)
  std::vector<bool> kept;      // parameters, constants, the result: live throughout
  size_t root = 0;

  explicit Graph(const HloComputation& c) {
    for (const auto& i : c.instructions()) instrs.push_back(i.get());
    const size_t n = instrs.size();
    std::unordered_map<const HloInstruction*, size_t> pos;
    for (size_t k = 0; k < n; ++k) pos[instrs[k]] = k;
    deps.resize(n), owners.resize(n), reads.resize(n), readers.resize(n);
    bytes.assign(n, 0), kept.assign(n, false);
    size_t last_ordered = n;
    for (size_t k = 0; k < n; ++k) {
      const HloInstruction& i = *instrs[k];
      for (const HloInstruction* o : i.operands()) deps[k].push_back(pos.at(o));
      if (IsOrdered(i)) {
        if (last_ordered < n) deps[k].push_back(last_ordered);
        last_ordered = k;
      }
      if (LivesInOperandBuffers(i)) {
        for (const HloInstruction* o : i.operands())
          for (size_t b : owners[pos.at(o)]) owners[k].push_back(b);
        continue;
      }
      owners[k] = {k};
      bytes[k] = LogicalBytes(i.shape());
      kept[k] = i.opcode() == Opcode::kParameter || i.opcode() == Opcode::kConstant;
      for (const HloInstruction* o : i.operands())
        for (size_t b : owners[pos.at(o)]) reads[k].push_back(b);
      std::sort(reads[k].begin(), reads[k].end());
      reads[k].erase(std::unique(reads[k].begin(), reads[k].end()), reads[k].end());
      for (size_t b : reads[k]) readers[b].push_back(k);
    }
    root = pos.at(c.root());
    for (size_t b : owners[root]) kept[b] = true;
  }
};

// XLA's ListScheduler: positions into the graph's instructions.
std::vector<size_t> ListSchedule(const Graph& g) {
  const size_t n = g.instrs.size();
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> waiting(n, 0);  // operands (and ordering edges) not yet scheduled
  for (size_t k = 0; k < n; ++k) {
    std::vector<size_t> deps = g.deps[k];
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (size_t d : deps) users[d].push_back(k);
    waiting[k] = deps.size();
  }
  std::vector<size_t> left(n);  // unscheduled readers per buffer
  for (size_t b = 0; b < n; ++b) left[b] = g.readers[b].size();
  std::vector<bool> done(n, false);
  // Net bytes freed by scheduling k now: kept buffers never go, and count nothing as they
  // are live throughout (so parameters come first, in order).
  auto gain = [&](size_t k) {
    int64_t freed = g.kept[k] ? 0 : -g.bytes[k];
    for (size_t b : g.reads[k])
      if (!g.kept[b] && left[b] == 1) freed += g.bytes[b];
    return freed;
  };
  std::set<std::pair<int64_t, size_t>> ready;  // (-gain, position)
  std::vector<int64_t> key(n, 0);
  auto push = [&](size_t k) { ready.insert({key[k] = -gain(k), k}); };
  for (size_t k = 0; k < n; ++k)
    if (!waiting[k]) push(k);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t k = ready.begin()->second;
    ready.erase(ready.begin());
    done[k] = true;
    order.push_back(k);
    for (size_t b : g.reads[k]) {
      if (--left[b] != 1) continue;
      for (size_t r : g.readers[b]) {  // the last reader now frees b: its gain rises
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
// 2^62: a graph of shared subexpressions doubles them per level).
std::vector<size_t> DfsSchedule(const Graph& g) {
  constexpr int64_t kTotalCap = int64_t{1} << 62;
  const size_t n = g.instrs.size();
  std::vector<std::vector<size_t>> deps = g.deps;
  std::vector<int64_t> total(n, 0);
  for (size_t k = 0; k < n; ++k) {
    total[k] = g.bytes[k];
    for (size_t d : deps[k])
      total[k] = total[d] > kTotalCap - total[k] ? kTotalCap : total[k] + total[d];
    std::stable_sort(deps[k].begin(), deps[k].end(),
                     [&](size_t a, size_t b) { return total[a] > total[b]; });
  }
  std::vector<size_t> order;
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
      order.push_back(k);
      stack.pop_back();
    }
  };
  for (size_t k = 0; k < n; ++k)  // parameters first, in order, as they are live anyway
    if (g.instrs[k]->opcode() == Opcode::kParameter) visit(k);
  visit(g.root);
  for (size_t k = 0; k < n; ++k) visit(k);  // anything the result does not need
  return order;
}

// The largest sum of live buffers over `order` (a cheap bound of what the plan needs, to
// rank the schedules): each buffer from its definition (parameters from the start) to its
// last reader; the result's buffers to the end.
int64_t LivePeak(const Graph& g, const std::vector<size_t>& order) {
  const size_t n = order.size();
  std::vector<size_t> at(n), last(n);
  for (size_t k = 0; k < n; ++k) at[order[k]] = k;
  for (size_t b = 0; b < n; ++b) {
    last[b] = at[b];
    for (size_t r : g.readers[b]) last[b] = std::max(last[b], at[r]);
  }
  for (size_t b : g.owners[g.root]) last[b] = n - 1;
  std::vector<int64_t> delta(n + 1, 0);
  for (size_t b = 0; b < n; ++b) {
    if (LivesInOperandBuffers(*g.instrs[b])) continue;
    const bool whole = g.instrs[b]->opcode() == Opcode::kParameter;
    const size_t start = whole ? 0 : at[b], end = whole ? n - 1 : last[b];
    const int64_t bytes = PaddedBytes(g.instrs[b]->shape());
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
  const Graph g(*entry);
  std::vector<size_t> given(g.instrs.size());
  for (size_t k = 0; k < given.size(); ++k) given[k] = k;
  // Ranked by the live bound; the best is kept only if the plan itself needs less.
  std::vector<size_t> best = given;
  int64_t best_live = LivePeak(g, given);
  for (std::vector<size_t> order : {ListSchedule(g), DfsSchedule(g)}) {
    if (order.size() != given.size() || order == given) continue;
    const int64_t live = LivePeak(g, order);
    if (live < best_live) best_live = live, best = std::move(order);
  }
  if (best == given) return false;
  std::vector<HloInstruction*> order;
  for (size_t k : best) order.push_back(g.instrs[k]);
  before_ = after_ = PlanMemory(module).peak_bytes;
  if (!entry->Reorder(order)) return false;
  const int64_t peak = PlanMemory(module).peak_bytes;
  if (peak < before_) {
    after_ = peak;
    return true;
  }
  entry->Reorder(g.instrs);
  return false;
}

}  // namespace tpusim::passes
