// Async conversion; see async_conversion.h.
#include "compiler/passes/async_conversion.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/passes/ir_edit.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

struct Form {
  Opcode sync;
  int element;  // of the start's tuple that is the result; -1: the start's whole result
};

std::optional<Form> FormOf(Opcode start) {
  switch (start) {
    case Opcode::kAllReduceStart:
      return Form{Opcode::kAllReduce, -1};
    case Opcode::kAllGatherStart:
      return Form{Opcode::kAllGather, 1};
    case Opcode::kReduceScatterStart:
      return Form{Opcode::kReduceScatter, 1};
    case Opcode::kCollectivePermuteStart:
      return Form{Opcode::kCollectivePermute, 1};
    case Opcode::kCopyStart:
      return Form{Opcode::kCopy, 0};
    default:
      return std::nullopt;
  }
}

bool IsDone(Opcode op) {
  return op == Opcode::kAllReduceDone || op == Opcode::kAllGatherDone ||
         op == Opcode::kReduceScatterDone || op == Opcode::kCollectivePermuteDone ||
         op == Opcode::kCopyDone;
}

// The synchronous op standing for `start` (named as it, which goes), and what stands for the
// start's own result.
HloInstruction* Convert(HloComputation& c, HloInstruction& start, const Form& f,
                        ModuleEdits& edits) {
  const hlo::Shape& shape = f.element < 0 ? start.shape() : start.shape().tuple_shapes[f.element];
  auto op = std::make_unique<HloInstruction>(start.name(), f.sync, shape);
  op->mutable_attributes() = start.attributes();
  for (HloInstruction* o : start.operands()) op->AddOperand(o);
  HloInstruction* sync = c.AddInstruction(std::move(op));
  edits.remove.insert(&start);
  if (f.element < 0) {
    edits.replace[&start] = sync;
    return sync;
  }
  // (operand, result, contexts) for all-gather and collective-permute; ((operands), result)
  // for reduce-scatter; (result, operand, context) for copy.
  HloInstruction* operand = start.operand(0);
  if (start.operand_count() > 1 || start.shape().tuple_shapes[0].IsTuple()) {
    std::vector<hlo::Shape> shapes;
    for (const HloInstruction* o : start.operands()) shapes.push_back(o->shape());
    operand = AddNew(c, start.name() + ".operands", Opcode::kTuple, hlo::Shape::Tuple(shapes),
                     start.operands());
  }
  std::vector<HloInstruction*> elements = f.sync == Opcode::kCopy
                                              ? std::vector<HloInstruction*>{sync, operand}
                                              : std::vector<HloInstruction*>{operand, sync};
  for (size_t k = 2; k < start.shape().tuple_shapes.size(); ++k) {
    HloInstruction* zero =
        AddNew(c, start.name() + ".context", Opcode::kConstant, start.shape().tuple_shapes[k], {});
    zero->mutable_literal().ints = {0};
    elements.push_back(zero);
  }
  edits.replace[&start] =
      AddNew(c, start.name() + ".tuple", Opcode::kTuple, start.shape(), elements);
  return sync;
}

}  // namespace

hlo::Result<bool> AsyncConversionPass::Run(hlo::HloModule& module) {
  ModuleEdits edits;
  std::unordered_map<const HloInstruction*, HloInstruction*> sync;  // start -> its sync op
  for (const auto& c : module.computations()) {
    const size_t count = c->instructions().size();  // Convert appends
    for (size_t k = 0; k < count; ++k) {
      HloInstruction& i = *c->instructions()[k];
      if (std::optional<Form> f = FormOf(i.opcode())) sync[&i] = Convert(*c, i, *f, edits);
    }
  }
  for (const auto& c : module.computations())
    for (const auto& i : c->instructions())
      if (IsDone(i->opcode())) {
        edits.replace[i.get()] = sync.at(i->operand(0));
        edits.remove.insert(i.get());
      }
  if (edits.empty()) return false;
  if (hlo::Status st = ApplyEdits(module, edits); !st.ok()) return st;
  return true;
}

}  // namespace tpusim::passes
