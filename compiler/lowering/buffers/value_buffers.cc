#include "compiler/lowering/buffers/value_buffers.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "compiler/passes/layout.h"

namespace tpusim::lowering {
namespace {

using hlo::HloInstruction;
using hlo::Opcode;

// Buffers above the plan start on page boundaries (DMA-friendly, as the plan's 512 B).
constexpr uint64_t kOwnBufferAlign = 4096;

uint64_t AlignUp(uint64_t bytes, uint64_t align) { return (bytes + align - 1) / align * align; }

}  // namespace

const hlo::Shape& ElementShape(const hlo::Shape& s, int64_t element) {
  return s.IsTuple() && element >= 0 && element < static_cast<int64_t>(s.tuple_shapes.size())
             ? s.tuple_shapes[static_cast<size_t>(element)]
             : s;
}

ValueBuffers::ValueBuffers(const hlo::HloModule& module, const passes::MemoryPlan& plan)
    : module_(module), plan_(plan) {
  base_ = next_ =
      AlignUp(static_cast<uint64_t>(std::max<int64_t>(plan.peak_bytes, 0)), kOwnBufferAlign);
}

ValueElement ValueBuffers::Resolve(const HloInstruction* v, int64_t element) const {
  for (;;) {
    if (auto p = bound_.find(v); p != bound_.end()) {
      v = p->second;
      continue;
    }
    switch (v->opcode()) {
      case Opcode::kGetTupleElement:
        element = v->GetInt("index").value_or(0);
        v = v->operand(0);
        continue;
      case Opcode::kTuple:
        if (element >= static_cast<int64_t>(v->operand_count())) return {v, element};
        v = v->operand(static_cast<size_t>(std::exchange(element, 0)));
        continue;
      case Opcode::kBitcast:
      case Opcode::kReshape:
      case Opcode::kAllReduceDone:
        v = v->operand(0);
        continue;
      case Opcode::kAllGatherDone:  // element 1 of its start
      case Opcode::kReduceScatterDone:
        v = v->operand(0);
        element = 1;
        continue;
      case Opcode::kAllGatherStart:  // element 0 is its operand
      case Opcode::kReduceScatterStart:
        if (element != 0) return {v, element};
        v = v->operand(0);
        continue;
      default:
        return {v, element};
    }
  }
}

uint64_t ValueBuffers::Address(const HloInstruction* v, int64_t element) {
  const auto [value, e] = Resolve(v, element);
  if (value->parent() == module_.entry()) {
    if (const passes::BufferInfo* b = plan_.Find(passes::ElementBufferName(value->name(), e)))
      return static_cast<uint64_t>(b->offset);
    if (const passes::BufferInfo* b = plan_.Find(value->name()))
      return static_cast<uint64_t>(b->offset);
    return base_;  // a constant: kernels inline it, nothing reads or writes this address
  }
  if (value->opcode() == Opcode::kConstant) return base_;
  if (auto it = own_.find({value, e}); it != own_.end()) return it->second;
  const hlo::Shape& shape = ElementShape(value->shape(), e);
  const uint64_t address =
      Allocate(static_cast<uint64_t>(passes::PaddedBytes(shape)),
               value->name() + (e ? "{" + std::to_string(e) + "}" : ""), shape.ToString());
  own_[{value, e}] = address;
  return address;
}

std::optional<std::pair<uint64_t, uint64_t>> ValueBuffers::EntryRange(const HloInstruction* v,
                                                                      int64_t element) const {
  const auto [value, e] = Resolve(v, element);
  if (value->parent() != module_.entry()) return std::nullopt;
  const passes::BufferInfo* b = plan_.Find(passes::ElementBufferName(value->name(), e));
  if (!b) b = plan_.Find(value->name());
  if (!b) return std::nullopt;
  const auto begin = static_cast<uint64_t>(b->offset);
  return std::make_pair(begin, begin + static_cast<uint64_t>(b->size));
}

void ValueBuffers::Bind(const HloInstruction* param, const HloInstruction* value) {
  bound_[param] = value;
}

bool ValueBuffers::Place(const HloInstruction* leaf, int64_t element, uint64_t address) {
  return own_.emplace(ValueElement{leaf, element}, address).second;
}

void ValueBuffers::Forget(const hlo::HloComputation* comp) {
  std::erase_if(own_, [&](const auto& b) { return b.first.first->parent() == comp; });
}

uint64_t ValueBuffers::Staging(const HloInstruction* loop, int64_t element, uint64_t bytes) {
  auto it = staging_.find({loop, element});
  if (it == staging_.end())
    it = staging_
             .emplace(ValueElement{loop, element},
                      Allocate(bytes, loop->name() + ".staging{" + std::to_string(element) + "}",
                               ElementShape(loop->shape(), element).ToString()))
             .first;
  return it->second;
}

uint64_t ValueBuffers::Allocate(uint64_t bytes, std::string name, std::string shape) {
  const uint64_t address = next_;
  next_ += AlignUp(std::max<uint64_t>(bytes, 4), kOwnBufferAlign);
  allocations_[address] = Owned{address, bytes, std::move(name), std::move(shape)};
  return address;
}

void ValueBuffers::CheckCapacity(uint64_t capacity) const {
  if (next_ <= capacity) return;
  const auto human = [](uint64_t b) { return passes::HumanBytes(static_cast<int64_t>(b)); };
  std::string msg = "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used " +
                    human(next_) + " of " + human(capacity) + " hbm: the memory plan's " +
                    human(base_) + " and " + human(next_ - base_) +
                    " for the values inside while bodies, calls and conditional branches (one "
                    "buffer per value, reused by every iteration). Exceeded hbm capacity by " +
                    human(next_ - capacity) + ".\n\nLargest of those buffers:\n";
  std::vector<const Owned*> by_size;
  for (const auto& [address, o] : allocations_) by_size.push_back(&o);
  std::stable_sort(by_size.begin(), by_size.end(),
                   [](const Owned* a, const Owned* b) { return a->bytes > b->bytes; });
  for (size_t k = 0; k < by_size.size() && k < 5; ++k)
    msg += "\n  " + std::to_string(k + 1) + ". Size: " + human(by_size[k]->bytes) +
           "\n     Shape: " + by_size[k]->shape + "\n     XLA label: %" + by_size[k]->name + "\n";
  throw std::invalid_argument(msg);
}

}  // namespace tpusim::lowering
