#include "compiler/lowering/data_parallel.h"

#include <algorithm>

namespace tpusim::lowering {

bool HasDim(const hlo::Shape& shape, int64_t batch) {
  if (shape.IsTuple())
    return std::any_of(shape.tuple_shapes.begin(), shape.tuple_shapes.end(),
                       [&](const hlo::Shape& s) { return HasDim(s, batch); });
  return std::find(shape.dims.begin(), shape.dims.end(), batch) != shape.dims.end();
}

std::set<const hlo::HloInstruction*> ParametersFeeding(const hlo::HloComputation& entry,
                                                       std::initializer_list<hlo::Opcode> users,
                                                       size_t index) {
  std::set<const hlo::HloInstruction*> params;
  for (const auto& i : entry.instructions()) {
    if (std::find(users.begin(), users.end(), i->opcode()) == users.end()) continue;
    if (index >= i->operand_count()) continue;
    const hlo::HloInstruction* w = i->operand(index);
    while (w->opcode() == hlo::Opcode::kConvert || w->opcode() == hlo::Opcode::kCopy ||
           w->opcode() == hlo::Opcode::kReshape || w->opcode() == hlo::Opcode::kBitcast)
      w = w->operand(0);
    if (w->opcode() == hlo::Opcode::kParameter) params.insert(w);
  }
  return params;
}

namespace {
constexpr std::initializer_list<hlo::Opcode> kContractions = {hlo::Opcode::kDot,
                                                              hlo::Opcode::kConvolution};
}  // namespace

BatchAnalysis AnalyzeBatch(const hlo::HloComputation& entry, int cores) {
  BatchAnalysis a;
  const std::vector<hlo::HloInstruction*> params = entry.parameters();
  std::set<const hlo::HloInstruction*> weights = ParametersFeeding(entry, kContractions, 1);
  const std::set<const hlo::HloInstruction*> activations =
      ParametersFeeding(entry, kContractions, 0);
  // Optimizer state (momentum, Adam moments) has its weight's shape: not an input either.
  std::set<std::vector<int64_t>> weight_shapes;
  for (const hlo::HloInstruction* w : weights) weight_shapes.insert(w->shape().dims);
  for (const hlo::HloInstruction* p : params)
    if (p->shape().IsArray() && p->shape().rank() >= 2 && !activations.count(p) &&
        weight_shapes.count(p->shape().dims))
      weights.insert(p);
  const hlo::HloInstruction* last = nullptr;
  for (const hlo::HloInstruction* p : params)
    if (p->shape().IsArray() && p->shape().rank() >= 2 && !weights.count(p) &&
        (!last || p->parameter_number() > last->parameter_number()))
      last = p;
  if (!last) {
    a.why_not = "no entry parameter has a batch dimension";
    return a;
  }
  const int64_t b = last->shape().dims[0];
  if (b < cores || b % cores) {
    a.why_not = "the batch " + std::to_string(b) + " (leading dimension of %" + last->name() +
                ") does not split over " + std::to_string(cores) + " cores";
    return a;
  }
  a.batch = b;
  for (const hlo::HloInstruction* p : params)
    if (p->shape().IsArray() && p->shape().rank() >= 1 && p->shape().dims[0] == b &&
        !weights.count(p)) {
      a.inputs.push_back(p);
      a.carrying.insert(p);
    }
  for (const auto& owned : entry.instructions()) {
    const hlo::HloInstruction* i = owned.get();
    if (i->opcode() == hlo::Opcode::kParameter) continue;
    bool from_batch =
        std::any_of(i->operands().begin(), i->operands().end(),
                    [&](const hlo::HloInstruction* o) { return a.carrying.count(o); });
    if (!from_batch) continue;
    if (HasDim(i->shape(), b))
      a.carrying.insert(i);
    else if (i->opcode() != hlo::Opcode::kTuple && i->shape().IsArray())
      a.reduced.insert(i);
  }
  return a;
}

}  // namespace tpusim::lowering
