// Buffer sizing, live ranges, offset assignment and the out-of-memory report; see memory.h.
#include "compiler/passes/memory.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/alias.h"
#include "compiler/passes/layout.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Greedy best fit, largest buffers first: each buffer takes the smallest gap between the
// buffers already placed whose live ranges overlap its own.
// Buffers start on DMA-friendly boundaries: every offset is a multiple of this.
constexpr int64_t kBufferAlignment = 512;

int64_t Aligned(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

void AssignOffsets(std::vector<BufferInfo>& bufs) {
  std::vector<size_t> order;
  for (size_t k = 0; k < bufs.size(); ++k)
    if (bufs[k].in_place_of.empty()) order.push_back(k);
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

// Buffers are row-major, so a reshape is a bitcast: the lowering emits no code for it and
// reads its operand's buffer. An all-reduce-done is its start's result, an all-gather-done
// or reduce-scatter-done its start's element 1.
bool LivesInOperandBuffers(const HloInstruction& i) {
  return i.opcode() == Opcode::kTuple || i.opcode() == Opcode::kGetTupleElement ||
         i.opcode() == Opcode::kBitcast || i.opcode() == Opcode::kReshape ||
         hlo::IsAsyncCollectiveDone(i.opcode());
}

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

// A tuple-shaped result of an op (batch-norm-training, a while loop, a tuple all-reduce) is
// one buffer per element, `name` for element 0 and `name{k}` for element k, so a small
// element (a batch mean) does not keep a large one (the normalized activations) alive.
std::string ElementBufferName(const std::string& name, int64_t index) {
  return index == 0 ? name : name + "{" + std::to_string(index) + "}";
}

namespace {

// The buffers behind each top-level element of a value (one element for an array).
using ElementBuffers = std::vector<std::vector<size_t>>;

BufferInfo NewBuffer(std::string name, const hlo::Shape& shape, bool param, int64_t t,
                     int64_t last) {
  BufferInfo b;
  b.name = std::move(name);
  b.shape = shape.ToString();
  b.size = PaddedBytes(shape);
  b.logical_size = LogicalBytes(shape);
  b.kind = param ? "parameter" : "temp";
  b.start = param ? 0 : t;
  b.end = param ? last : t;
  return b;
}

std::vector<size_t> Flatten(const ElementBuffers& e) {
  std::vector<size_t> out;
  for (const auto& v : e) out.insert(out.end(), v.begin(), v.end());
  return out;
}

}  // namespace

namespace {

bool WorksElementwise(const HloInstruction& i) {
  const hlo::OpCategory k = hlo::GetOpcodeInfo(i.opcode()).category;
  return k == hlo::OpCategory::kElementwiseUnary || k == hlo::OpCategory::kElementwiseBinary ||
         k == hlo::OpCategory::kElementwiseTernary ||
         (i.opcode() == Opcode::kFusion && i.GetWord("kind") == "kLoop");
}

// Marks each aliased output buffer that can safely live in its parameter's buffer.
void Donate(const hlo::HloModule& module, const ElementBuffers& result, MemoryPlan& plan) {
  auto aliases = hlo::ParseInputOutputAlias(module.input_output_alias);
  if (!aliases.ok()) return;  // MemoryPlanningPass reports it
  const hlo::HloComputation& c = *module.entry();
  std::unordered_set<std::string> taken;  // parameters already given to an output
  for (const hlo::InputOutputAlias& a : *aliases) {
    if (a.output_index.size() > 1 || !a.parameter_index.empty()) continue;
    const size_t k = a.output_index.empty() ? 0 : static_cast<size_t>(a.output_index[0]);
    if (k >= result.size() || result[k].size() != 1) continue;
    BufferInfo& out = plan.buffers[result[k][0]];
    // The producer, and the shape of what it writes there: element e of a tuple-valued one
    // (a multi-output loop fusion's buffers are named name, name{1}, name{2}).
    const HloInstruction* producer = c.Find(out.name);
    size_t element = 0;
    if (const size_t brace = out.name.rfind('{');
        !producer && brace != std::string::npos && out.name.back() == '}') {
      producer = c.Find(out.name.substr(0, brace));
      element = std::stoul(out.name.substr(brace + 1, out.name.size() - brace - 2));
    }
    const hlo::Shape* written = producer ? &producer->shape() : nullptr;
    if (written && written->IsTuple())
      written = element < written->tuple_shapes.size() ? &written->tuple_shapes[element] : nullptr;
    const HloInstruction* param = nullptr;
    for (const HloInstruction* p : c.parameters())
      if (p->parameter_number() == a.parameter) param = p;
    const BufferInfo* in = param ? plan.Find(param->name()) : nullptr;
    if (!producer || !written || !in || out.kind != "output" || in->kind != "parameter" ||
        !taken.insert(in->name).second || in->size < out.size)
      continue;
    bool reads_param = false;
    for (const HloInstruction* op : producer->operands()) reads_param |= op == param;
    const bool safe = in->last_read < out.start ||
                      (in->last_read == out.start && reads_param && WorksElementwise(*producer) &&
                       param->shape().dims == written->dims);
    if (!safe) {
      taken.erase(in->name);
      continue;
    }
    out.in_place_of = in->name;
  }
}

}  // namespace

MemoryPlan PlanMemory(const hlo::HloModule& module) {
  MemoryPlan plan;
  const hlo::HloComputation* c = module.entry();
  if (!c) return plan;
  const auto& instrs = c->instructions();
  const int64_t last = static_cast<int64_t>(instrs.size()) - 1;
  std::unordered_map<const HloInstruction*, ElementBuffers> buffers_of;
  for (int64_t t = 0; t <= last; ++t) {
    const HloInstruction& i = *instrs[t];
    // Operands live until their last use; get-tuple-element only names its element, which
    // lives until the element's last use.
    // An asynchronous collective reads its operands until its done.
    std::vector<const HloInstruction*> reads(i.operands().begin(), i.operands().end());
    if (hlo::IsAsyncCollectiveDone(i.opcode()))
      reads.insert(reads.end(), i.operand(0)->operands().begin(), i.operand(0)->operands().end());
    for (const HloInstruction* op : reads) {
      if (i.opcode() == Opcode::kGetTupleElement) break;
      for (const auto& element : buffers_of[op])
        for (size_t b : element) {
          plan.buffers[b].end = std::max(plan.buffers[b].end, t);
          plan.buffers[b].last_read = std::max(plan.buffers[b].last_read, t);
        }
    }
    ElementBuffers& mine = buffers_of[&i];
    if (i.opcode() == Opcode::kTuple) {
      for (const HloInstruction* op : i.operands()) mine.push_back(Flatten(buffers_of[op]));
    } else if (i.opcode() == Opcode::kGetTupleElement) {
      const ElementBuffers& whole = buffers_of[i.operand(0)];
      const int64_t k = i.GetInt("index").value_or(-1);
      mine.push_back(whole.size() > 1 && k >= 0 && k < static_cast<int64_t>(whole.size())
                         ? whole[static_cast<size_t>(k)]
                         : Flatten(whole));
    } else if ((i.opcode() == Opcode::kAllGatherStart ||
                i.opcode() == Opcode::kReduceScatterStart) &&
               i.shape().IsTuple() && i.shape().tuple_shapes.size() == 2 &&
               i.operand_count() == 1) {
      // Its operand, then the result, written while the start is in flight.
      mine.push_back(Flatten(buffers_of[i.operand(0)]));
      mine.push_back({plan.buffers.size()});
      plan.buffers.push_back(
          NewBuffer(ElementBufferName(i.name(), 1), i.shape().tuple_shapes[1], false, t, last));
    } else if (i.opcode() == Opcode::kAllGatherDone || i.opcode() == Opcode::kReduceScatterDone) {
      const ElementBuffers& start = buffers_of[i.operand(0)];
      mine.push_back(start.size() == 2 ? start[1] : Flatten(start));
    } else if (LivesInOperandBuffers(i)) {
      for (const HloInstruction* op : i.operands()) mine.push_back(Flatten(buffers_of[op]));
    } else {
      const bool param = i.opcode() == Opcode::kParameter;
      if (i.shape().IsTuple() && !param && !i.shape().tuple_shapes.empty()) {
        for (size_t k = 0; k < i.shape().tuple_shapes.size(); ++k) {
          mine.push_back({plan.buffers.size()});
          plan.buffers.push_back(NewBuffer(ElementBufferName(i.name(), static_cast<int64_t>(k)),
                                           i.shape().tuple_shapes[k], param, t, last));
        }
      } else {
        mine.push_back({plan.buffers.size()});
        plan.buffers.push_back(NewBuffer(i.name(), i.shape(), param, t, last));
      }
    }
  }
  if (c->root()) {
    for (size_t b : Flatten(buffers_of[c->root()])) {
      plan.buffers[b].end = last;
      if (plan.buffers[b].kind == "temp") plan.buffers[b].kind = "output";
    }
  }
  if (c->root()) Donate(module, buffers_of[c->root()], plan);
  AssignOffsets(plan.buffers);
  for (BufferInfo& b : plan.buffers) {
    if (!b.in_place_of.empty()) b.offset = plan.Find(b.in_place_of)->offset;
    plan.peak_bytes = std::max(plan.peak_bytes, b.offset + b.size);
  }
  std::vector<int64_t> delta(static_cast<size_t>(last) + 2, 0);  // live bytes by a sweep
  for (const BufferInfo& b : plan.buffers) {
    if (!b.in_place_of.empty()) continue;  // counted in its parameter
    delta[static_cast<size_t>(b.start)] += b.size;
    delta[static_cast<size_t>(b.end) + 1] -= b.size;
  }
  int64_t live = 0;
  for (int64_t t = 0; t <= last; ++t) {
    live += delta[static_cast<size_t>(t)];
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
  if (auto aliases = hlo::ParseInputOutputAlias(module.input_output_alias); !aliases.ok())
    return aliases.status();
  plan_ = PlanMemory(module);
  if (plan_.peak_bytes > capacity_) {
    std::string message = OutOfMemoryMessage(plan_, capacity_);
    // A single-replica module the batch-sharding pass left whole holds its global batch on
    // every core: say why it was not split.
    if (!module.batch_not_split_reason.empty())
      message += "\nThe module was not split over the cores (it holds its whole batch on each): " +
                 module.batch_not_split_reason + ".\n";
    return hlo::Status::Error(message);
  }
  return false;
}

}  // namespace tpusim::passes
