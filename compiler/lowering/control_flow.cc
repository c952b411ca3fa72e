// while, call and conditional (lowerer.h). A called computation's parameters are bound to
// what its caller passes and its values get buffers of their own (value_buffers.h); its
// result leaves are computed straight into the caller's buffers where they can be, else
// copied there (value_copies.h). A while loop's state lives in the while's buffers.
#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>

#include "compiler/lowering/asm_util.h"
#include "compiler/lowering/branch_dispatch.h"
#include "compiler/lowering/loop_state.h"
#include "compiler/lowering/lowerer.h"
#include "compiler/lowering/op_kernels.h"

namespace tpusim::lowering {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::Opcode;

// Ops whose result is another value's buffer or has no data in HBM (constants are inlined
// into the kernels that read them).
bool DefinesNoBuffer(const HloInstruction& i) {
  switch (i.opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kBitcast:
    case Opcode::kReshape:
      return true;
    default:
      return false;
  }
}

int64_t Leaves(const hlo::Shape& s) {
  return s.IsTuple() ? static_cast<int64_t>(s.tuple_shapes.size()) : 1;
}

// The trip count of a while loop: XLA's known_trip_count, or the `i < N` pattern with i
// starting at a constant.
std::optional<int64_t> TripCount(const HloInstruction& w) {
  if (const std::string* cfg = w.RawAttr("backend_config")) {
    std::smatch m;
    static const std::regex kKnown("\"known_trip_count\"\\s*:\\s*\\{\\s*\"n\"\\s*:\\s*\"(\\d+)\"");
    if (std::regex_search(*cfg, m, kKnown)) return std::stoll(m[1]);
  }
  const HloInstruction* cmp = w.condition() ? w.condition()->root() : nullptr;
  if (!cmp || cmp->opcode() != Opcode::kCompare || cmp->GetWord("direction") != "LT") return {};
  const HloInstruction *iv = cmp->operand(0), *limit = cmp->operand(1);
  if (iv->opcode() != Opcode::kGetTupleElement || limit->opcode() != Opcode::kConstant ||
      limit->literal().ints.empty())
    return {};
  const int64_t index = iv->GetInt("index").value_or(-1);
  const HloInstruction* init = w.operand(0);
  if (init->opcode() != Opcode::kTuple || index < 0 ||
      index >= static_cast<int64_t>(init->operand_count()))
    return {};
  const HloInstruction* start = init->operand(static_cast<size_t>(index));
  if (start->opcode() != Opcode::kConstant || start->literal().ints.empty()) return {};
  return std::max<int64_t>(0, limit->literal().ints[0] - start->literal().ints[0]);
}

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

// The copies control flow adds, as one op of the lowered module (exact unless a constant
// cannot be filled: CopyOf).
LoweredOp CopyOp(const std::string& name, int64_t executions) {
  LoweredOp op;
  op.name = name;
  op.opcode = "copy";
  op.kind = KernelKind::kDma;
  op.executions = executions;
  op.exact = true;
  return op;
}

}  // namespace

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
                          const hlo::Shape& shape, bool carries, LoweredOp& op) {
  ValueCopy c;
  c.dst = dst;
  c.bytes = CopyBytes(shape, carries);
  op.hbm_bytes += 2 * c.bytes;
  const HloInstruction* value = buffers_.Resolve(leaf, leaf_element).first;
  if (value->opcode() != Opcode::kConstant) {
    c.src = Address(leaf, leaf_element);
    return c;
  }
  c.fill = ConstantWord(*value);
  if (!c.fill) {  // the fill's time, not its values
    c.fill = 0;
    op.exact = false;
    op.note += std::string(op.note.empty() ? "" : "; ") + "%" + value->name() +
               " is a constant of several values or 8-byte elements, which has no buffer in "
               "HBM (timing only)";
  }
  return c;
}

void Lowerer::EmitCopies(const std::vector<ValueCopy>& copies, const std::string& tag) {
  std::vector<ValueCopy> needed;
  for (const ValueCopy& c : copies)
    if (c.fill || c.src != c.dst) needed.push_back(c);
  for (const std::string& k : CopyKernels(needed, tag))
    AppendKernels(std::vector<std::string>(text_.size(), k));
}

// call: the computation's kernels inline, its parameters the call's operands.
void Lowerer::LowerCall(const HloInstruction& c, int64_t executions, bool carries) {
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
  LowerCalled(*comp, executions, carries);
  if (pending.empty()) return;
  LoweredOp op = CopyOp(c.name() + ".result", executions);
  std::vector<ValueCopy> copies;
  for (const ResultCopy& p : pending)
    copies.push_back(CopyOf(p.leaf, p.leaf_element, Address(&c, p.element),
                            ElementShape(c.shape(), p.element), carries, op));
  EmitCopies(copies, c.name());
  out_.ops.push_back(std::move(op));
}

// conditional: the sequencer reads the predicate or branch index (branch_dispatch.h) and
// runs only the chosen branch's kernels; every branch leaves its result in the
// conditional's buffers, computed in place where it can, else copied there.
void Lowerer::LowerConditional(const HloInstruction& c, int64_t executions, bool carries) {
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
    LowerCalled(*branches[k], executions, carries);
    std::vector<ValueCopy> leaf_copies;
    for (const ResultCopy& copy : copies[k])
      leaf_copies.push_back(CopyOf(copy.leaf, copy.leaf_element, Address(&c, copy.element),
                                   ElementShape(c.shape(), copy.element), carries,
                                   out_.ops[op_index]));
    EmitCopies(leaf_copies, c.name());
    Emit("    jmp " + label + "_end\n");
  }
  Emit(label + "_end:\n");
}

// while with a static trip count: the state (the while's buffers) starts as a copy of the
// operand; a counted loop runs the body, whose parameter reads the state, then carries the
// body's result into the state (CarryState). The while's value is the state.
void Lowerer::LowerWhile(const HloInstruction& w, int64_t executions, bool entry) {
  const std::optional<int64_t> trips = TripCount(w);
  if (!trips)
    throw std::invalid_argument("%" + w.name() +
                                " (while): the trip count is not static (no known_trip_count and "
                                "the condition is not `i < constant` from a constant start)");
  const HloComputation& body = *w.body();
  if (body.parameters().size() != 1)
    throw std::invalid_argument("%" + w.name() + " (while): the body " + body.name() + " takes " +
                                std::to_string(body.parameters().size()) + " parameters, not one");
  const bool carries = entry ? batch_.carrying.count(&w) > 0 : in_batch_;
  LoweredOp init = CopyOp(w.name() + ".init", executions);
  std::vector<ValueCopy> copies;
  for (int64_t k = 0; k < Leaves(w.shape()); ++k)
    copies.push_back(
        CopyOf(w.operand(0), k, Address(&w, k), ElementShape(w.shape(), k), carries, init));
  EmitCopies(copies, w.name());
  if (!copies.empty()) out_.ops.push_back(std::move(init));
  if (*trips == 0) return;
  Enter(body);
  buffers_.Bind(body.parameters()[0], &w);
  const int depth = loop_depth_++;
  const std::string label = "loop" + std::to_string(loops_++),
                    slot = std::to_string(kLoopCounterSmem + 4 * depth);
  Emit("    li r31, 0\n    sst r31, r0, " + slot + "\n" + label + ":\n");
  CarryState(w, executions * *trips, carries);
  Emit("    sld r31, r0, " + slot + "\n    addi r31, r31, 1\n    sst r31, r0, " + slot +
       "\n    li r30, " + std::to_string(*trips) + "\n    blt r31, r30, " + label + "\n");
  --loop_depth_;
}

// One iteration: the body, then its result into the state. Root elements computed in place
// need nothing; the others are copied after the whole body, those read from another state
// element first into staging buffers, so no copy overwrites an element another still reads.
void Lowerer::CarryState(const HloInstruction& w, int64_t executions, bool carries) {
  const HloComputation& body = *w.body();
  const std::vector<RootElement> roots = BodyRootElements(body);
  std::vector<bool> placed(roots.size(), false);
  for (size_t k = 0; k < roots.size(); ++k)
    placed[k] = roots[k].in_place && buffers_.Place(roots[k].value, roots[k].value_element,
                                                    Address(&w, static_cast<int64_t>(k)));
  LowerCalled(body, executions, carries);
  std::set<uint64_t> state;
  for (int64_t k = 0; k < Leaves(w.shape()); ++k) state.insert(Address(&w, k));
  LoweredOp op = CopyOp(w.name() + ".carry", executions);
  std::vector<ValueCopy> staged, into_state;
  for (size_t k = 0; k < roots.size(); ++k) {
    const RootElement& r = roots[k];
    const int64_t e = static_cast<int64_t>(k);
    if (placed[k] || r.state_element == e || !r.value) continue;
    const hlo::Shape& shape = ElementShape(w.shape(), e);
    ValueCopy c = r.state_element >= 0
                      ? ValueCopy{Address(&w, e), CopyBytes(shape, carries),
                                  Address(&w, r.state_element), std::nullopt}
                      : CopyOf(r.value, r.value_element, Address(&w, e), shape, carries, op);
    if (!c.fill && c.src == c.dst) continue;
    if (r.state_element >= 0) op.hbm_bytes += 2 * c.bytes;
    if (!c.fill && state.count(c.src)) {  // another state element: through staging
      const uint64_t staging = buffers_.Staging(&w, e, c.bytes);
      staged.push_back(ValueCopy{staging, c.bytes, c.src, std::nullopt});
      op.hbm_bytes += 2 * c.bytes;
      c.src = staging;
    }
    into_state.push_back(c);
  }
  if (into_state.empty()) return;
  EmitCopies(staged, w.name());
  EmitCopies(into_state, w.name());
  out_.ops.push_back(std::move(op));
}

}  // namespace tpusim::lowering
