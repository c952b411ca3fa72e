// call and conditional (lowerer.h; while loops: while_loop.cc). A called computation's
// parameters are bound to what its caller passes and its values get buffers of their own
// (value_buffers.h); its result leaves are computed straight into the caller's buffers where
// they can be, else copied there (value_copies.h).
#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>

#include "compiler/lowering/control/branch_dispatch.h"
#include "compiler/lowering/driver/emitter_table.h"
#include "compiler/lowering/driver/lowerer.h"
#include "compiler/lowering/driver/op_context.h"

namespace tpusim::lowering {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// The branch a constant selector picks (XLA's rule: an index out of range picks the last
// branch), or none when the selector is computed.
std::optional<size_t> ConstantBranch(const HloInstruction& selector, size_t branches, bool pred) {
  if (selector.opcode() != Opcode::kConstant) return std::nullopt;
  const hlo::Literal& l = selector.literal();
  if (l.ints.empty() && l.floats.empty()) return std::nullopt;
  const double v = l.ints.empty() ? l.floats[0] : static_cast<double>(l.ints[0]);
  if (pred) return v != 0 ? 0 : 1;
  return v < 0 || v >= static_cast<double>(branches) ? branches - 1 : static_cast<size_t>(v);
}

}  // namespace

LoweredOp CopyOp(const std::string& name, int64_t executions) {
  LoweredOp op;
  op.name = name;
  op.opcode = "copy";
  op.kind = KernelKind::kDma;
  op.executions = executions;
  op.exact = true;
  return op;
}

void Lowerer::Enter(const HloComputation& comp) {
  if (!entered_.insert(&comp).second) buffers_.Forget(&comp);  // another call site
}

std::vector<Lowerer::ResultCopy> Lowerer::PlaceResult(const HloComputation& comp,
                                                      const HloInstruction& caller) {
  std::vector<ResultCopy> copies;
  const HloInstruction* root = comp.root();
  const bool tuple_root = root->opcode() == Opcode::kTuple && caller.shape().IsTuple();
  for (int64_t e = 0; e < Leaves(caller.shape()); ++e) {
    const HloInstruction* leaf = tuple_root ? root->operand(static_cast<size_t>(e)) : root;
    const int64_t element = tuple_root ? 0 : e;
    const bool in_place = leaf->parent() == &comp && !DefinesNoBuffer(*leaf) &&
                          ElementShape(leaf->shape(), element).IsArray() &&
                          buffers_.Place(leaf, element, Address(&caller, e));
    if (!in_place) copies.push_back({leaf, element, e});
  }
  return copies;
}

ValueCopy Lowerer::CopyOf(const HloInstruction* leaf, int64_t leaf_element, uint64_t dst,
                          const hlo::Shape& shape, LoweredOp& op) {
  ValueCopy c;
  c.dst = dst;
  c.bytes = ByteSize(shape);
  if (shape.IsTuple()) {  // its leaves are buffers of their own, not one block
    op.exact = false;
    op.note += std::string(op.note.empty() ? "" : "; ") + "%" + leaf->name() +
               " holds a nested tuple, copied as one block (timing only)";
  }
  const HloInstruction* value = buffers_.Resolve(leaf, leaf_element).first;
  if (value->opcode() != Opcode::kConstant) {
    c.src = Address(leaf, leaf_element);
    return c;
  }
  c.fill = ConstantWord(*value);
  if (!c.fill) c.words = ConstantWords(*value);
  if (!c.fill && c.words.empty()) {  // the fill's time, not its values
    c.fill = 0;
    op.exact = false;
    op.note += std::string(op.note.empty() ? "" : "; ") + "%" + value->name() +
               " is a constant of 8-byte elements, an odd count of bf16 ones or over " +
               std::to_string(kMaxConstantWords) +
               " words, which has no buffer in HBM (timing only)";
  }
  return c;
}

void Lowerer::EmitCopies(const std::vector<ValueCopy>& copies, const std::string& tag,
                         LoweredOp& op) {
  std::vector<ValueCopy> needed;
  for (const ValueCopy& c : copies)
    if (c.fill || !c.words.empty() || c.src != c.dst) {
      needed.push_back(c);
      op.hbm_bytes += (c.fill || !c.words.empty() ? 1 : 2) * c.bytes;  // a fill only writes
    }
  for (const std::string& k : CopyKernels(needed, tag))
    AppendDrained(std::vector<std::string>(text_.size(), k));
}

// call: the computation's kernels inline, its parameters the call's operands.
void Lowerer::LowerCall(const HloInstruction& c, int64_t executions) {
  const HloComputation* comp = c.to_apply();
  if (!comp) throw std::invalid_argument("%" + c.name() + " (call): no computation to call");
  const std::vector<HloInstruction*> params = comp->parameters();
  if (params.size() != c.operand_count())
    throw std::invalid_argument("%" + c.name() + " (call): " + comp->name() + " takes " +
                                std::to_string(params.size()) + " parameters for " +
                                std::to_string(c.operand_count()) + " operands");
  Enter(*comp);
  for (size_t k = 0; k < params.size(); ++k) buffers_.Bind(params[k], c.operand(k));
  const std::vector<ResultCopy> pending = PlaceResult(*comp, c);
  LowerCalled(*comp, executions);
  if (pending.empty()) return;
  LoweredOp op = CopyOp(c.name() + ".result", executions);
  std::vector<ValueCopy> copies;
  for (const ResultCopy& p : pending)
    copies.push_back(CopyOf(p.leaf, p.leaf_element, Address(&c, p.element),
                            ElementShape(c.shape(), p.element), op));
  EmitCopies(copies, c.name(), op);
  out_.ops.push_back(std::move(op));
}

// conditional: the sequencer reads the predicate or branch index (branch_dispatch.h) and
// runs only the chosen branch's kernels; every branch leaves its result in the
// conditional's buffers, computed in place where it can, else copied there.
void Lowerer::LowerConditional(const HloInstruction& c, int64_t executions) {
  const std::vector<HloComputation*> branches = c.branch_computations();
  if (branches.empty() || branches.size() + 1 != c.operand_count())
    throw std::invalid_argument("%" + c.name() +
                                " (conditional): " + std::to_string(branches.size()) +
                                " branches for " + std::to_string(c.operand_count()) + " operands");
  const bool pred = c.operand(0)->shape().type == hlo::PrimitiveType::kPred;
  LoweredOp op;
  op.name = c.name();
  op.opcode = "conditional";
  op.executions = executions;
  op.kind = KernelKind::kDma;
  op.exact = true;
  std::set<const HloComputation*> entered;
  std::vector<std::vector<ResultCopy>> copies(branches.size());
  for (size_t k = 0; k < branches.size(); ++k) {
    const HloComputation* b = branches[k];
    if (b->parameters().size() != 1)
      throw std::invalid_argument("%" + c.name() + " (conditional): branch " + b->name() +
                                  " takes " + std::to_string(b->parameters().size()) +
                                  " parameters, not one");
    if (entered.insert(b).second) Enter(*b);
    copies[k] = PlaceResult(*b, c);
  }
  const std::string label = "cond" + std::to_string(conditionals_++);
  const std::optional<size_t> fixed = ConstantBranch(*c.operand(0), branches.size(), pred);
  if (!fixed)
    Emit(BranchDispatch(
        {Address(c.operand(0)), pred, static_cast<int>(branches.size()), label, c.name()}));
  const size_t op_index = out_.ops.size();
  out_.ops.push_back(op);
  for (size_t k = 0; k < branches.size(); ++k) {
    if (fixed && *fixed != k) continue;
    Emit(label + "_b" + std::to_string(k) + ":\n");
    buffers_.Bind(branches[k]->parameters()[0], c.operand(k + 1));
    LowerCalled(*branches[k], executions);
    std::vector<ValueCopy> leaf_copies;
    for (const ResultCopy& copy : copies[k])
      leaf_copies.push_back(CopyOf(copy.leaf, copy.leaf_element, Address(&c, copy.element),
                                   ElementShape(c.shape(), copy.element), out_.ops[op_index]));
    EmitCopies(leaf_copies, c.name(), out_.ops[op_index]);
    Emit("    jmp " + label + "_end\n");
  }
  Emit(label + "_end:\n");
}

}  // namespace tpusim::lowering
