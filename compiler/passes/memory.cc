// Buffer sizing, live ranges, offset assignment and the out-of-memory report; see memory.h.
#include "compiler/passes/memory.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <unordered_map>

#include "compiler/passes/layout.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

bool IsAlias(const HloInstruction& i) {
  return i.opcode() == Opcode::kTuple || i.opcode() == Opcode::kGetTupleElement ||
         i.opcode() == Opcode::kBitcast;
}

// Greedy best fit, largest buffers first: each buffer takes the smallest gap between the
// buffers already placed whose live ranges overlap its own.
// Buffers start on DMA-friendly boundaries: every offset is a multiple of this.
constexpr int64_t kBufferAlignment = 512;

int64_t Aligned(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

void AssignOffsets(std::vector<BufferInfo>& bufs) {
  std::vector<size_t> order(bufs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bufs[a].size > bufs[b].size; });
  std::vector<size_t> placed;
  for (size_t k : order) {
    BufferInfo& b = bufs[k];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, offset + size)
    for (size_t j : placed) {
      const BufferInfo& o = bufs[j];
      if (o.start <= b.end && b.start <= o.end)
        busy.push_back({o.offset, o.offset + Aligned(o.size)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      int64_t gap = lo - cursor;
      if (gap >= Aligned(b.size) && (best < 0 || gap < best_gap)) best = cursor, best_gap = gap;
      cursor = std::max(cursor, hi);
    }
    b.offset = best >= 0 ? best : cursor;
    placed.push_back(k);
  }
}

}  // namespace

const BufferInfo* MemoryPlan::Find(const std::string& name) const {
  if (index_.size() != buffers.size()) {  // (re)build: buffers only ever grow
    index_.clear();
    for (size_t i = 0; i < buffers.size(); ++i) index_.emplace(buffers[i].name, i);
  }
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &buffers[it->second];
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + "B";
  static const char kUnits[] = "KMGTPE";
  const char* unit = kUnits;
  while (bytes >= int64_t{1024} * 1024) {
    bytes /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%c", static_cast<double>(bytes) / 1024.0, *unit);
  return buf;
}

MemoryPlan PlanMemory(const hlo::HloModule& module) {
  MemoryPlan plan;
  const hlo::HloComputation* c = module.entry();
  if (!c) return plan;
  const auto& instrs = c->instructions();
  const int64_t last = static_cast<int64_t>(instrs.size()) - 1;
  std::unordered_map<const HloInstruction*, std::vector<size_t>> buffers_of;
  for (int64_t t = 0; t <= last; ++t) {
    const HloInstruction& i = *instrs[t];
    for (const HloInstruction* op : i.operands()) {  // operands live until their last use
      for (size_t b : buffers_of[op]) plan.buffers[b].end = std::max(plan.buffers[b].end, t);
    }
    std::vector<size_t>& mine = buffers_of[&i];
    if (IsAlias(i)) {
      for (const HloInstruction* op : i.operands()) {
        mine.insert(mine.end(), buffers_of[op].begin(), buffers_of[op].end());
      }
      continue;
    }
    BufferInfo b;
    b.name = i.name();
    b.shape = i.shape().ToString();
    b.size = PaddedBytes(i.shape());
    b.logical_size = LogicalBytes(i.shape());
    bool param = i.opcode() == Opcode::kParameter;
    b.kind = param ? "parameter" : "temp";
    b.start = param ? 0 : t;
    b.end = param ? last : t;
    mine.push_back(plan.buffers.size());
    plan.buffers.push_back(std::move(b));
  }
  if (c->root()) {
    for (size_t b : buffers_of[c->root()]) {
      plan.buffers[b].end = last;
      if (plan.buffers[b].kind == "temp") plan.buffers[b].kind = "output";
    }
  }
  AssignOffsets(plan.buffers);
  for (const BufferInfo& b : plan.buffers) {
    plan.peak_bytes = std::max(plan.peak_bytes, b.offset + b.size);
  }
  for (int64_t t = 0; t <= last; ++t) {
    int64_t live = 0;
    for (const BufferInfo& b : plan.buffers) live += (b.start <= t && t <= b.end) ? b.size : 0;
    plan.peak_live_bytes = std::max(plan.peak_live_bytes, live);
  }
  return plan;
}

std::string OutOfMemoryMessage(const MemoryPlan& plan, int64_t capacity, int top) {
  std::string out = "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used " +
                    HumanBytes(plan.peak_bytes) + " of " + HumanBytes(capacity) +
                    " hbm. Exceeded hbm capacity by " + HumanBytes(plan.peak_bytes - capacity) +
                    ".\n\nLargest program allocations in hbm:\n";
  std::vector<const BufferInfo*> bufs;
  for (const BufferInfo& b : plan.buffers) bufs.push_back(&b);
  std::stable_sort(bufs.begin(), bufs.end(),
                   [](const BufferInfo* a, const BufferInfo* b) { return a->size > b->size; });
  for (int k = 0; k < top && k < static_cast<int>(bufs.size()); ++k) {
    const BufferInfo& b = *bufs[k];
    out += "\n  " + std::to_string(k + 1) + ". Size: " + HumanBytes(b.size) +
           "\n     Shape: " + b.shape + "\n     Unpadded size: " + HumanBytes(b.logical_size) +
           "\n     XLA label: %" + b.name +
           "\n     Allocation type: " + (b.kind == "temp" ? "HLO temp" : b.kind) + "\n";
  }
  return out;
}

hlo::Result<bool> MemoryPlanningPass::Run(hlo::HloModule& module) {
  plan_ = PlanMemory(module);
  if (plan_.peak_bytes > capacity_) return hlo::Status::Error(OutOfMemoryMessage(plan_, capacity_));
  return false;
}

}  // namespace tpusim::passes
